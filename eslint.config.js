// @ts-check
import js from '@eslint/js';
import importX from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';

/** Every folder of src/ but the ones named: `others('cli', 'sandbox')`. */
const FOLDERS = [
  'api',
  'cli',
  'config',
  'events',
  'ops',
  'receiver',
  'rules',
  'sandbox',
  'scheduler',
  'state',
  'status',
  'text',
  'time',
];
const others = (...names) => FOLDERS.filter((name) => !names.includes(name)).map((name) => `./src/${name}`);
/** The bot: everything in src/ except the CLI (which also offers the sandbox) and the sandbox. */
const BOT = [...others('cli', 'sandbox'), './src/*.ts'];

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', 'data/', 'coverage/', 'bench/results/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // The arrows of docs/architecture.md: cli -> receiver, scheduler -> rules -> api, state; nothing
    // imports cli; the bot never imports the sandbox and the sandbox imports nothing of the bot;
    // outside code reaches each folder through its front door, <folder>/index.ts.
    files: ['src/**/*.ts'],
    plugins: { 'import-x': importX },
    rules: {
      'import-x/no-restricted-paths': [
        'error',
        {
          zones: [
            {
              target: [...others('cli'), './src/*.ts'],
              from: './src/cli',
              message: 'nothing imports the CLI',
            },
            { target: BOT, from: './src/sandbox', message: 'the bot never imports the sandbox' },
            {
              target: others('cli'),
              from: './src/*.ts',
              message: 'the start-up files (src/*.ts) assemble the folders; only the CLI imports them',
            },
            {
              target: './src/sandbox',
              from: others('sandbox'),
              message: 'the sandbox imports nothing of the bot',
            },
            {
              target: './src/rules',
              from: [
                './src/cli',
                './src/receiver',
                './src/scheduler',
                './src/status',
                './src/ops',
                './src/config',
                './src/events',
              ],
              message: 'rules -> api, state: rules never import what sits above them',
            },
            {
              target: './src/api',
              from: others('api'),
              message: 'the API client imports nothing of the bot',
            },
            {
              target: './src/state',
              from: others('state'),
              message: 'the state store imports nothing of the bot',
            },
            {
              target: './src/scheduler',
              from: ['./src/receiver', './src/status'],
              message: 'the scheduler sits beside the receiver, under the start-up files',
            },
            {
              target: './src/receiver',
              from: './src/scheduler',
              message: 'the receiver sits beside the scheduler, under the start-up files',
            },
            // Every folder others use has a front door: outside code imports its index.ts only.
            ...FOLDERS.filter((name) => name !== 'cli').map((name) => ({
              target: [...others(name), './src/*.ts'],
              from: `./src/${name}`,
              except: ['./index.ts'],
              message: `outside code imports ${name}/ through its front door, ${name}/index.ts`,
            })),
          ],
        },
      ],
    },
  },
  {
    // Tests read loosely typed JSON answers; `any` there keeps assertions readable.
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    files: ['**/*.js'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly' } },
  },
);
