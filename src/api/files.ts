/**
 * Repository files. docs/api-v3.md#repository-files lists "Repository Files" as not shown; this follows the 8.x API
 * (`POST`/`PUT /projects/:id/repository/files`), which the sandbox implements too. Each call is a
 * commit on `branch_name`.
 */
import type { Http } from './http.ts';
import type { CallOptions, ProjectRef } from './types.ts';

export interface FileCommit {
  /** Path of the file inside the repository, e.g. `guide/setup.md`. */
  file_path: string;
  branch_name: string;
  content: string;
  commit_message: string;
  /** `text` (default) or `base64` when `content` is base64-encoded (binary files). */
  encoding?: 'text' | 'base64';
}

/** What 8.x servers answer to both calls. */
export interface FileCommitResult {
  file_path: string;
  branch_name: string;
}

const FILES = '/projects/:id/repository/files';

export function createFilesApi(http: Http) {
  return {
    /** 201; a 400 with the server's message when the file exists already or the branch is missing. */
    create(project: ProjectRef, file: FileCommit, options: CallOptions = {}): Promise<FileCommitResult> {
      return http.request({
        method: 'POST',
        route: FILES,
        params: { id: project },
        body: { ...file },
        ...options,
      });
    },

    /**
     * 200. Not retried although it is a PUT: each update is a commit, and repeating one whose answer
     * was lost would add a second commit. A lost answer is an `ambiguous` error instead.
     */
    update(project: ProjectRef, file: FileCommit, options: CallOptions = {}): Promise<FileCommitResult> {
      return http.request({
        method: 'PUT',
        route: FILES,
        params: { id: project },
        body: { ...file },
        idempotent: false,
        ...options,
      });
    },
  };
}
