/**
 * The sandbox's data file (`--data FILE`) and the repositories beside it (`FILE.repos/`). The file
 * holds every user's password and tokens and the repositories hold private projects' code, so only
 * the sandbox's user may read them, as the bot's own state (docs/reliability.md#security): the file
 * is written 0600 (through a temporary file made 0600, then renamed over it), folders the sandbox
 * makes are 0700, and what an older version left readable (a 0644 file, a 0755 `FILE.repos/`) is
 * narrowed when the sandbox starts. A folder the user made (`data/`, the current folder) is left as
 * it is, with a warning when other users may list it.
 *
 * With a data file the state is meant to last: each write is fsynced before its rename (a power cut
 * leaves the old file or the new one, never an empty one). The writes are coalesced and run after
 * the answers, so this costs no request anything.
 */
import { chmod, mkdir, open, readFile, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { withAllCollections, type SandboxData } from './db.ts';

export const DATA_FILE_MODE = 0o600;
export const DATA_FOLDER_MODE = 0o700;

const openToOthers = (mode: number) => (mode & 0o077) !== 0;

async function modeOf(file: string): Promise<number | undefined> {
  try {
    return (await stat(file)).mode;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/**
 * Makes the data file's folder (0700) unless it exists, warns when an existing one may be listed by
 * others, and narrows what the sandbox owns (the file, `FILE.repos/`) when others may read it.
 */
export async function prepareDataFolder(file: string, warn: (line: string) => void): Promise<void> {
  const folder = path.dirname(file);
  const folderMode = await modeOf(folder);
  if (folderMode === undefined) await mkdir(folder, { recursive: true, mode: DATA_FOLDER_MODE });
  else if (openToOthers(folderMode))
    warn(
      `sandbox: the folder ${folder} can be listed by other users; the data file is 0600, but chmod 700 the folder to hide its names too`,
    );
  const fileMode = await modeOf(file);
  if (fileMode !== undefined && openToOthers(fileMode)) {
    await chmod(file, DATA_FILE_MODE);
    warn(`sandbox: ${file} was readable by other users (it holds passwords and tokens): now 0600`);
  }
  const repos = reposFolderOf(file);
  const reposMode = await modeOf(repos);
  if (reposMode === undefined) await mkdir(repos, { mode: DATA_FOLDER_MODE });
  else if (openToOthers(reposMode)) {
    await chmod(repos, DATA_FOLDER_MODE);
    warn(`sandbox: ${repos} was readable by other users (it holds the repositories): now 0700`);
  }
}

/** Where the repositories of the data file `file` live. */
export function reposFolderOf(file: string): string {
  return `${file}.repos`;
}

export interface DataFile {
  /** The stored data, or null when there is no file yet. */
  read(): Promise<SandboxData | null>;
  write(data: SandboxData): Promise<void>;
}

export function dataFile(file: string): DataFile {
  const temp = path.join(path.dirname(file), `.${path.basename(file)}.tmp`);
  return {
    async read() {
      let text: string;
      try {
        text = await readFile(file, 'utf8');
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
        throw error;
      }
      // A file of an earlier version lacks the collections kept since: they start empty.
      return withAllCollections(JSON.parse(text) as SandboxData);
    },
    async write(data) {
      // A temporary file a crash left behind may be 0644: made anew, never reused.
      await rm(temp, { force: true });
      const handle = await open(temp, 'wx', DATA_FILE_MODE);
      try {
        await handle.writeFile(JSON.stringify(data, null, 2));
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(temp, file);
    },
  };
}
