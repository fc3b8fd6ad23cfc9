/**
 * Repository files. docs/api-v3.md#repository-files lists "Repository Files" as not shown; this follows the 8.x API
 * (`POST`/`PUT /projects/:id/repository/files`), which the sandbox implements too. Each call is a
 * commit on `branch_name`.
 */
import { z } from 'zod';
import type { Http } from './http.ts';
import type { BoundedCallOptions, CallOptions, ProjectRef } from './types.ts';

/** One file at a ref (`GET /projects/:id/repository/files?file_path=&ref=`), as 8.x servers answer. */
export const repositoryFileSchema = z.looseObject({
  file_name: z.string(),
  file_path: z.string(),
  size: z.number(),
  /** `base64` on 8.x servers. */
  encoding: z.string(),
  content: z.string(),
  ref: z.string(),
  /** The blob's id: equal ids, equal contents. */
  blob_id: z.string(),
  /** The commit the ref points at. */
  commit_id: z.string(),
  /** The last commit that changed this file. */
  last_commit_id: z.string().optional(),
});
export type RepositoryFile = z.infer<typeof repositoryFileSchema>;

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
    /**
     * One file at a branch, tag or sha; 404 when the ref or the file does not exist. `content` is
     * base64 (`encoding`); `fileText` decodes it. The answer holds the whole file: a caller reading
     * a file it does not control gives `maxBytes` (the server says the size only with the content).
     * A bare name is resolved as git does, a tag before a branch of the same name: give
     * `refs/heads/<branch>` or a sha to read a branch.
     */
    get(
      project: ProjectRef,
      filePath: string,
      ref: string,
      options: BoundedCallOptions = {},
    ): Promise<RepositoryFile> {
      return http.request({
        method: 'GET',
        route: FILES,
        params: { id: project },
        query: { file_path: filePath, ref },
        schema: repositoryFileSchema,
        ...options,
      });
    },

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

/** The text of a file the server answered (base64 on 8.x servers; plain text otherwise). */
export function fileText(file: Pick<RepositoryFile, 'encoding' | 'content'>): string {
  return file.encoding === 'base64' ? Buffer.from(file.content, 'base64').toString('utf8') : file.content;
}
