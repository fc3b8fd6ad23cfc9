/**
 * A project's `.hookbot.yml` through the files API (repository-rules.ts): the file at a ref, read up
 * to a bound, and whether a merge request changes it.
 */
import { ApiError, type Client, type RepositoryFile } from '../../api/index.ts';
import { MAX_RULE_FILE_BYTES } from '../grammar/parse-file.ts';
import type { ItemAddress } from '../item/read-snapshot.ts';
import { REPOSITORY_FILE } from './repository-file.ts';

export type RepositoryClient = Pick<
  Client,
  'projects' | 'files' | 'statuses' | 'notes' | 'mergeRequests' | 'issues' | 'branches'
>;

const isNotFound = (error: unknown): boolean => error instanceof ApiError && error.status === 404;

/** A `.hookbot.yml` as read: the file, or only that it is over the limit (its reading was stopped). */
type FileRead = { file: RepositoryFile } | { tooLarge: true };

/**
 * The most bytes of the files API's answer read. It carries the file's content base64-encoded (4
 * bytes for 3) and a few short fields: past this bound the file is surely over the limit of a rule
 * file, and the rest is never downloaded (a 200 MB file once took the bot's heap, issue 28).
 */
const MAX_FILE_ANSWER_BYTES = Math.ceil(MAX_RULE_FILE_BYTES / 3) * 4 + 16 * 1024;

/**
 * The most bytes of a merge request's `/changes` read (every file's diff): past it, whether the
 * merge request changes the file is found by its blobs instead (`touchesRepositoryFile`).
 */
const MAX_CHANGES_BYTES = 4 * 1024 * 1024;

const isTooLarge = (error: unknown): boolean => error instanceof ApiError && error.kind === 'too_large';

/**
 * The file at a ref, or undefined when the ref or the file does not exist. `ref` must be
 * unambiguous (a sha, or `refs/heads/<branch>`): the server resolves a bare name as git does, a tag
 * before a branch, and anyone who may push a tag could name one like the default branch.
 */
export async function readFile(
  client: RepositoryClient,
  project: number,
  ref: string,
): Promise<FileRead | undefined> {
  try {
    return {
      file: await client.files.get(project, REPOSITORY_FILE, ref, { maxBytes: MAX_FILE_ANSWER_BYTES }),
    };
  } catch (error) {
    if (isNotFound(error)) return undefined;
    if (isTooLarge(error)) return { tooLarge: true };
    throw error;
  }
}

/** What tells two reads of the file apart: its blob, or that it was too large to read. */
export const readStamp = (read: FileRead | undefined): string =>
  read === undefined ? 'none' : 'file' in read ? read.file.blob_id : 'too-large';

/**
 * Whether a merge request changes `.hookbot.yml`: its `/changes` say so, read up to a bound. A
 * change too large to list is judged by the file's blob at the head against the one at the target
 * branch (a change of the file on the target since the merge request's start then counts too).
 */
export async function touchesRepositoryFile(
  client: RepositoryClient,
  item: ItemAddress,
  mr: { sha: string; target_branch: string; source_project_id?: number | null },
): Promise<boolean> {
  try {
    const changes = await client.mergeRequests.changes(item.projectId, item.id, {
      maxBytes: MAX_CHANGES_BYTES,
    });
    return changes.changes.some(
      (change) => change.new_path === REPOSITORY_FILE || change.old_path === REPOSITORY_FILE,
    );
  } catch (error) {
    if (!isTooLarge(error)) throw error;
  }
  const [head, target] = await Promise.all([
    readFile(client, mr.source_project_id ?? item.projectId, mr.sha),
    readFile(client, item.projectId, `refs/heads/${mr.target_branch}`),
  ]);
  // Two files too large to read cannot be compared: reviewed (the head's file is refused anyway).
  return readStamp(head) !== readStamp(target) || readStamp(head) === 'too-large';
}
