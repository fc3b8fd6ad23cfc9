/**
 * The server's refusals that the person at the terminal can fix, said that way. Without this a
 * wrong token read `GET /user failed: 401: 401 Unauthorized`, which names neither the token nor
 * where it comes from.
 */
import { closest } from '../text/index.ts';
import { ApiError, type Client } from '../api/index.ts';

/** What to do about an error from the first calls to the server, or undefined when it is no such case. */
export function apiProblem(error: unknown, apiUrl: string): string | undefined {
  if (!(error instanceof ApiError)) return undefined;
  const call = `${error.method} ${error.path}`;
  switch (error.kind) {
    case 'unauthorized':
      return `the server at ${apiUrl} refused the API token (401 on ${call}). The token comes from HOOKBOT_API_TOKEN (or the file HOOKBOT_API_TOKEN_FILE names, or api.token): set it to a private token of the bot's user (with api.token_type: oauth for an OAuth token).`;
    case 'network':
    case 'timeout':
      return `cannot reach the server at ${apiUrl} (${error.message}). Check HOOKBOT_API_URL (api.url) and that the server is up.`;
    case 'not_found':
      if (error.route === '/user')
        return `${apiUrl} answered 404 for ${call}: it does not look like a v3 API. HOOKBOT_API_URL (api.url) should be the server's address, e.g. https://git.example.com (or with /api/v3).`;
      return undefined;
    default:
      return undefined;
  }
}

/**
 * Checks that `path` (namespace/project) is a project the bot sees; otherwise a sentence naming it,
 * with the closest visible project when there is one among the first 1,000.
 */
export async function missingProject(client: Client, path: string): Promise<string | undefined> {
  try {
    await client.projects.get(path);
    return undefined;
  } catch (error) {
    if (!(error instanceof ApiError) || error.kind !== 'not_found') throw error;
  }
  const visible: string[] = [];
  for await (const project of client.projects.list({}, { perPage: 100, maxPages: 10 }))
    visible.push(project.path_with_namespace);
  const near = closest(path, visible);
  return `no project ${path} that the bot's user can see${near ? ` (did you mean ${near}?)` : ''}`;
}
