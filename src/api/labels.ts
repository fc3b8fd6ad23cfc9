/** Project labels (docs/api-v3.md#labels): list, create, edit, delete, all addressed by name. */
import { z } from 'zod';
import type { Http } from './http.ts';
import type { CallOptions, ListOptions, ProjectRef } from './types.ts';

export const labelSchema = z.looseObject({
  name: z.string(),
  /** `#` followed by 6 hex digits. */
  color: z.string(),
  description: z.string().nullable().optional(),
  /** In list answers only. */
  open_issues_count: z.number().optional(),
  closed_issues_count: z.number().optional(),
  open_merge_requests_count: z.number().optional(),
});
export type Label = z.infer<typeof labelSchema>;

export interface NewLabel {
  name: string;
  /** `#RRGGBB`; the server refuses anything else with a per-field 400 (`fieldErrors.color`). */
  color: string;
  description?: string;
}

/** At least one of `new_name` or `color` (the server's rule, checked here before any call). */
export interface LabelEdit {
  new_name?: string;
  color?: string;
  description?: string;
}

const LABELS = '/projects/:id/labels';

export function createLabelsApi(http: Http) {
  return {
    /** Real servers answer the whole list in one page without pagination headers; the pager copes. */
    list(project: ProjectRef, options: ListOptions = {}): AsyncIterable<Label> {
      return http.paginate({
        method: 'GET',
        route: LABELS,
        params: { id: project },
        schema: labelSchema,
        ...options,
      });
    },

    /** Answers 200 (not 201); a label of that name already there is a 409 ApiError (kind `conflict`). */
    create(project: ProjectRef, label: NewLabel, options: CallOptions = {}): Promise<Label> {
      return http.request({
        method: 'POST',
        route: LABELS,
        params: { id: project },
        body: { ...label },
        schema: labelSchema,
        ...options,
      });
    },

    /**
     * Edits the label called `name`. Rejects with a TypeError, before any call, when neither
     * `new_name` nor `color` is given (a description alone is not an edit the server accepts).
     */
    async update(
      project: ProjectRef,
      name: string,
      edit: LabelEdit,
      options: CallOptions = {},
    ): Promise<Label> {
      if (edit.new_name === undefined && edit.color === undefined) {
        throw new TypeError(
          `label "${name}": an edit needs new_name or color (the server refuses anything else)`,
        );
      }
      return http.request({
        method: 'PUT',
        route: LABELS,
        params: { id: project },
        body: { name, ...edit },
        schema: labelSchema,
        // A rename cannot be repeated: after a lost answer, the retry would find no label `name` (404).
        idempotent: edit.new_name === undefined,
        ...options,
      });
    },

    /**
     * Deletes the label called `name`; 404 when absent (labels are an exception to idempotent DELETE).
     * `name` goes in the query string, as real clients of that era send it: a DELETE body is not
     * reliably read by every server and proxy.
     */
    async remove(project: ProjectRef, name: string, options: CallOptions = {}): Promise<void> {
      await http.request({
        method: 'DELETE',
        route: LABELS,
        params: { id: project },
        query: { name },
        ...options,
      });
    },
  };
}
