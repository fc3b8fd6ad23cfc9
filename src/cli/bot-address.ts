/**
 * How the CLI reaches a running bot's ops port (`hookbot explain --bot`, `hookbot queue`): the URL
 * and the status page's credentials.
 */

/**
 * The URL without credentials, and an Authorization header from them, else from the status page's
 * credentials as the bot reads them (status-credentials.ts: HOOKBOT_STATUS_USERNAME and
 * HOOKBOT_STATUS_PASSWORD, else `server.status_auth` in the file HOOKBOT_CONFIG names, its
 * password_file too). `from` says where they came from; `problem`, why the configuration could not
 * give them (said only if the bot asks for credentials).
 */
export async function botAddress(url: string): Promise<{
  base: string;
  headers: Record<string, string>;
  from?: string;
  problem?: string;
}> {
  const parsed = new URL(url);
  let username = decodeURIComponent(parsed.username);
  let password = decodeURIComponent(parsed.password);
  let from: string | undefined = username && password ? 'the URL' : undefined;
  let problem: string | undefined;
  if (from === undefined) {
    const { statusCredentials } = await import('./status-credentials.ts');
    const credentials = statusCredentials(process.env);
    if (credentials.found) ({ username, password, from } = credentials);
    else problem = credentials.problem;
  }
  parsed.username = '';
  parsed.password = '';
  const headers: Record<string, string> = { accept: 'application/json' };
  if (from !== undefined)
    headers.authorization = `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
  return {
    base: parsed.toString().replace(/\/+$/, ''),
    headers,
    ...(from !== undefined ? { from } : {}),
    ...(problem !== undefined ? { problem } : {}),
  };
}
