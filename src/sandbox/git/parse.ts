/**
 * What git's outputs and objects mean to the sandbox: a commit object as the API shows a commit, a
 * signature's time with its offset, 8.x's commit title, and `diff-tree` output as the API's diffs.
 */
import type { GitCommit, GitDiffEntry } from '../context.ts';

export function parseCommit(sha: string, raw: Buffer): GitCommit {
  const body = raw.toString('utf8');
  const split = body.indexOf('\n\n');
  const headers = split < 0 ? body : body.slice(0, split);
  const message = split < 0 ? '' : body.slice(split + 2);
  let tree = '';
  const parents: string[] = [];
  let author: Signature = { name: '', email: '', date: '' };
  let committer: Signature = author;
  for (const line of headers.split('\n')) {
    if (line.startsWith(' ')) continue; // continuation of a multi-line header (gpgsig, mergetag)
    const space = line.indexOf(' ');
    const key = line.slice(0, space);
    const value = line.slice(space + 1);
    if (key === 'tree') tree = value;
    else if (key === 'parent') parents.push(value);
    else if (key === 'author') author = parseSignature(value);
    else if (key === 'committer') committer = parseSignature(value);
  }
  return {
    id: sha,
    // gitlab_git's `short_id` is `id[0..10]`: 11 characters (the 8.x samples show `ed899a2f4b5`).
    short_id: sha.slice(0, 11),
    title: commitTitle(message),
    message,
    author_name: author.name,
    author_email: author.email,
    authored_date: author.date,
    committer_name: committer.name,
    committer_email: committer.email,
    committed_date: committer.date,
    parent_ids: parents,
    tree,
  };
}

interface Signature {
  name: string;
  email: string;
  date: string;
}

function parseSignature(value: string): Signature {
  const match = /^(.*?) ?<([^>]*)> (\d+) ([+-])(\d\d)(\d\d)$/.exec(value);
  if (!match) return { name: value, email: '', date: '' };
  const [, name = '', email = '', seconds = '0', sign = '+', hh = '00', mm = '00'] = match;
  const offset = (sign === '-' ? -1 : 1) * (Number(hh) * 60 + Number(mm));
  const local = new Date(Number(seconds) * 1000 + offset * 60_000).toISOString().slice(0, 19);
  return { name, email, date: `${local}${formatOffset(offset, ':')}` };
}

export function formatOffset(minutes: number, separator: string): string {
  const abs = Math.abs(minutes);
  const hh = String(Math.floor(abs / 60)).padStart(2, '0');
  const mm = String(abs % 60).padStart(2, '0');
  return `${minutes < 0 ? '-' : '+'}${hh}${separator}${mm}`;
}

/**
 * The title real servers show (Commit#title of 8.x): the first line, or its first 80 characters and
 * an ellipsis when that line is longer than 100; `--no commit message` when there is none.
 */
export function commitTitle(message: string): string {
  if (message.trim() === '') return '--no commit message';
  const end = message.indexOf('\n');
  const first = end < 0 ? message : message.slice(0, end);
  return first.length > 100 ? `${first.slice(0, 80)}…` : first;
}

/**
 * Diff entries from `diff-tree -z --raw` (exact paths, modes, status) zipped with the patches of
 * `diff-tree -p` (same order). The `diff` text starts at `--- a/...` (or `Binary files ...`), as
 * real servers strip the `diff --git`/`index` header lines, and is empty when there is no such line
 * (a pure rename or mode change).
 */
export function parseDiff(raw: string, patch: string): GitDiffEntry[] {
  const fields = raw.split('\0');
  const records: { aMode: string; bMode: string; status: string; oldPath: string; newPath: string }[] = [];
  for (let i = 0; i < fields.length;) {
    const meta = fields[i++] ?? '';
    if (!meta.startsWith(':')) continue;
    const [aMode = '', bMode = '', , , status = ''] = meta.slice(1).split(' ');
    const letter = status.charAt(0);
    const oldPath = fields[i++] ?? '';
    const newPath = letter === 'R' || letter === 'C' ? (fields[i++] ?? '') : oldPath;
    records.push({ aMode, bMode, status: letter, oldPath, newPath });
  }
  const patches = patch.length === 0 ? [] : `\n${patch}`.split('\ndiff --git ').slice(1);
  let next = 0;
  return records.map((r) => ({
    // A type change (file <-> symlink) is one raw record but two patches (a deletion and an addition).
    diff:
      r.status === 'T'
        ? stripHeaders(patches[next++] ?? '') + stripHeaders(patches[next++] ?? '')
        : stripHeaders(patches[next++] ?? ''),
    old_path: r.oldPath,
    new_path: r.newPath,
    // A side that does not exist has mode 0 (`"0"`), as libgit2 reported it to real servers.
    a_mode: r.aMode === '000000' ? '0' : r.aMode,
    b_mode: r.bMode === '000000' ? '0' : r.bMode,
    new_file: r.status === 'A',
    renamed_file: r.status === 'R',
    deleted_file: r.status === 'D',
  }));
}

function stripHeaders(filePatch: string): string {
  const lines = filePatch.split('\n');
  const start = lines.findIndex((l) => l.startsWith('---') || l.startsWith('Binary'));
  if (start < 0) return '';
  // git pads `--- a/name with space` with a tab for GNU patch; libgit2 (real servers) does not.
  const kept = lines
    .slice(start)
    .map((l, i) => (i < 2 && /^(---|\+\+\+) /.test(l) ? l.replace(/\t$/, '') : l));
  const out = kept.join('\n');
  return out.endsWith('\n') ? out : `${out}\n`;
}
