/**
 * The demo seed (`hookbot sandbox --seed demo`): a few users, a group `acme` with two projects that
 * have real repositories, the labels the default rules use, issues and a merge request from a feature
 * branch, so a newcomer sees something real. The records are the same kinds the routes write.
 */
import type { SandboxContext } from './context.ts';
import type {
  IssueRec,
  LabelRec,
  MergeRequestRec,
  MilestoneRec,
  NoteRec,
  ProjectRec,
  UserRec,
} from './db.ts';
import { recordEvent } from './events.ts';
import { addGroup, addIssueRecord, addProject, addUser } from './factories.ts';
import { DEVELOPER, MASTER, REPORTER } from './permissions.ts';

/**
 * The demo users' private tokens. Fixed so that the demo, the docs and a config file can name them;
 * they only ever open a local sandbox's demo data (the administrator's token is random unless given).
 */
export const DEMO_TOKENS = {
  alice: 'alice-demo-token',
  bob: 'bob-demo-token',
  hookbot: 'hookbot-demo-token',
} as const;

export type DemoUserName = keyof typeof DEMO_TOKENS;

/** The bot's personal access token in the demo: git over HTTP for the merge queue (docs/merge-queue.md). */
export const DEMO_GIT_TOKEN = 'hookbot-demo-git-token';

export interface DemoSeed {
  users: Record<DemoUserName, { id: number; username: string; token: string }>;
  projects: Record<'web' | 'helpdesk', { id: number; path_with_namespace: string }>;
  mergeRequests: { search: { id: number; iid: number; project_id: number; source_branch: string } };
}

const LABELS: { title: string; color: string; description: string }[] = [
  { title: 'bug', color: '#d9534f', description: 'Something does not work as it should' },
  { title: 'needs-triage', color: '#f0ad4e', description: 'Nobody has looked at it yet' },
  { title: 'question', color: '#5bc0de', description: 'A question rather than a change' },
  { title: 'automerge', color: '#5cb85c', description: 'Merge once the build succeeds' },
  { title: 'do-not-merge', color: '#8e44ad', description: 'Blocks merging' },
  { title: 'pinned', color: '#428bca', description: 'Never closed as stale' },
];

const WEB_FILES: Record<string, string> = {
  'README.md': '# web\n\nThe Acme web front end.\n\n```\nnpm install && npm start\n```\n',
  'package.json': `${JSON.stringify({ name: 'acme-web', version: '1.0.0', main: 'src/index.js' }, null, 2)}\n`,
  'src/index.js':
    "import { render } from './render.js';\n\nconst projects = ['web', 'helpdesk'];\nrender(document.body, projects);\n",
  'src/render.js':
    "export function render(root, items) {\n  root.innerHTML = items.map((item) => `<li>${item}</li>`).join('');\n}\n",
  '.gitignore': 'node_modules/\n',
};

const HELPDESK_FILES: Record<string, string> = {
  'README.md': '# helpdesk\n\nAsk here: open an issue and the support team answers within a day.\n',
};

function addLabels(ctx: SandboxContext, project: ProjectRec): void {
  const now = ctx.db.now();
  for (const label of LABELS) {
    const rec: LabelRec = {
      id: ctx.db.nextId('labels'),
      project_id: project.id,
      title: label.title,
      color: label.color,
      description: label.description,
      template: false,
      created_at: now,
      updated_at: now,
    };
    ctx.db.data.labels.push(rec);
  }
}

function addIssue(
  ctx: SandboxContext,
  project: ProjectRec,
  author: UserRec,
  input: { title: string; description: string; labels: string[]; closed?: boolean; milestone?: MilestoneRec },
): IssueRec {
  const db = ctx.db;
  const issue = addIssueRecord(db, {
    project_id: project.id,
    title: input.title,
    description: input.description,
    state: input.closed ? 'closed' : 'opened',
    author_id: author.id,
    milestone_id: input.milestone?.id ?? null,
    labels: input.labels,
  });
  const target = { target_id: issue.id, target_type: 'Issue', target_title: issue.title };
  recordEvent(db, { project_id: project.id, author_id: author.id, action_name: 'opened', ...target });
  if (input.closed)
    recordEvent(db, { project_id: project.id, author_id: author.id, action_name: 'closed', ...target });
  return issue;
}

function addComment(
  ctx: SandboxContext,
  project: ProjectRec,
  issue: IssueRec,
  author: UserRec,
  body: string,
) {
  const db = ctx.db;
  const now = db.now();
  const note: NoteRec = {
    id: db.nextId('notes'),
    project_id: project.id,
    body,
    author_id: author.id,
    noteable_type: 'Issue',
    noteable_id: issue.id,
    commit_id: null,
    path: null,
    line: null,
    line_type: null,
    system: false,
    created_at: now,
    updated_at: now,
  };
  db.data.notes.push(note);
  recordEvent(db, {
    project_id: project.id,
    author_id: author.id,
    action_name: 'commented on',
    target_id: note.id,
    target_type: 'Note',
    note_id: note.id,
  });
}

/**
 * A feature branch with one commit, then the merge request. Until the repositories can branch (or if
 * git refuses), the merge request is still recorded: the branch is simply missing.
 */
async function addFeatureMergeRequest(ctx: SandboxContext, project: ProjectRec, author: UserRec) {
  const db = ctx.db;
  const source = 'feature/search';
  let mergeStatus: MergeRequestRec['merge_status'] = 'unchecked';
  try {
    const base = await ctx.git.createBranch(project.id, source, project.default_branch);
    if (base) {
      await ctx.git.commitFile(project.id, {
        branch: source,
        path: 'src/search.js',
        content:
          'export function search(items, query) {\n  const q = query.toLowerCase();\n  return items.filter((item) => item.toLowerCase().includes(q));\n}\n',
        message: 'Add a case-insensitive project search',
        author: { name: author.name, email: author.email },
        mode: 'create',
      });
      const mergeable = await ctx.git.canMerge(project.id, project.default_branch, project.id, source);
      mergeStatus = mergeable ? 'can_be_merged' : 'cannot_be_merged';
    }
  } catch (error) {
    console.error('sandbox seed: could not create the feature branch', error);
  }
  const now = db.now();
  const mr: MergeRequestRec = {
    id: db.nextId('mergeRequests'),
    iid: db.nextIid('mergeRequests', project.id),
    project_id: project.id,
    title: 'Add project search',
    description: 'Closes #1: searching ignores case now.',
    state: 'opened',
    source_branch: source,
    target_branch: project.default_branch,
    source_project_id: project.id,
    target_project_id: project.id,
    author_id: author.id,
    assignee_id: null,
    milestone_id: null,
    labels: ['needs-triage'],
    upvotes: 0,
    downvotes: 0,
    merge_status: mergeStatus,
    merge_when_build_succeeds: false,
    merge_user_id: null,
    merge_params: {},
    last_head_sha: null,
    merge_commit_sha: null,
    deleted: false,
    created_at: now,
    updated_at: now,
  };
  db.data.mergeRequests.push(mr);
  recordEvent(db, {
    project_id: project.id,
    author_id: author.id,
    action_name: 'opened',
    target_id: mr.id,
    target_type: 'MergeRequest',
    target_title: mr.title,
  });
  return mr;
}

export async function seedDemo(ctx: SandboxContext): Promise<DemoSeed> {
  const db = ctx.db;
  // The administrator (id 1) owns the group; a bare database (tests) falls back to alice.
  const root = db.data.users.find((u) => u.id === 1);
  const alice = addUser(db, {
    username: 'alice',
    name: 'Alice Developer',
    private_token: DEMO_TOKENS.alice,
  });
  const bob = addUser(db, { username: 'bob', name: 'Bob Reporter', private_token: DEMO_TOKENS.bob });
  const bot = addUser(db, {
    username: 'hookbot',
    name: 'Hook Bot',
    private_token: DEMO_TOKENS.hookbot,
    personal_access_tokens: [DEMO_GIT_TOKEN],
    bio: 'Automation: labels, merges and reminders.',
  });
  const owner = root ?? alice;
  const acme = addGroup(db, {
    name: 'Acme',
    path: 'acme',
    owner_id: owner.id,
    members: [
      { user_id: alice.id, access_level: DEVELOPER },
      { user_id: bob.id, access_level: REPORTER },
      // Master: the bot labels, comments, merges and manages the project's hook.
      { user_id: bot.id, access_level: MASTER },
    ],
  });

  const web = await addProject(ctx, {
    name: 'web',
    namespace_id: acme.id,
    creator_id: owner.id,
    description: 'The Acme web front end',
    visibility_level: 10,
    initialFiles: WEB_FILES,
  });
  const helpdesk = await addProject(ctx, {
    name: 'helpdesk',
    namespace_id: acme.id,
    creator_id: owner.id,
    description: 'Support requests',
    visibility_level: 20,
    initialFiles: HELPDESK_FILES,
  });
  for (const project of [web, helpdesk]) {
    recordEvent(db, { project_id: project.id, author_id: owner.id, action_name: 'created' });
    addLabels(ctx, project);
  }

  const now = db.now();
  const milestone: MilestoneRec = {
    id: db.nextId('milestones'),
    iid: db.nextIid('milestones', web.id),
    project_id: web.id,
    title: 'v1.0',
    description: 'The first release',
    state: 'active',
    due_date: null,
    created_at: now,
    updated_at: now,
  };
  db.data.milestones.push(milestone);

  const searchBug = addIssue(ctx, web, bob, {
    title: 'Search ignores projects with capital letters',
    description: 'Searching for "web" does not find "Web".',
    labels: ['bug'],
    milestone,
  });
  addComment(ctx, web, searchBug, alice, 'I can reproduce this on master.');
  addIssue(ctx, web, alice, {
    title: 'Add a dark theme',
    description: 'Easier on the eyes at night.',
    labels: [],
  });
  addIssue(ctx, web, bob, {
    title: 'Broken link in the README',
    description: 'The install section links to a page that is gone.',
    labels: ['bug'],
    closed: true,
  });
  addIssue(ctx, helpdesk, owner, {
    title: 'Read me first: how support works',
    description: 'Open one issue per request. We answer within a working day.',
    labels: ['pinned'],
  });
  addIssue(ctx, helpdesk, bob, {
    title: 'How do I reset my password?',
    description: 'The reset mail never arrives.',
    labels: [],
  });
  addIssue(ctx, helpdesk, alice, {
    title: 'VPN drops every hour',
    description: 'Since Monday the VPN disconnects on the hour.',
    labels: ['needs-triage'],
  });

  const mr = await addFeatureMergeRequest(ctx, web, alice);
  db.changed();

  const userInfo = (u: UserRec) => ({ id: u.id, username: u.username, token: u.private_token });
  const projectInfo = (p: ProjectRec) => ({ id: p.id, path_with_namespace: `acme/${p.path}` });
  return {
    users: { alice: userInfo(alice), bob: userInfo(bob), hookbot: userInfo(bot) },
    projects: { web: projectInfo(web), helpdesk: projectInfo(helpdesk) },
    mergeRequests: {
      search: { id: mr.id, iid: mr.iid, project_id: mr.project_id, source_branch: mr.source_branch },
    },
  };
}
