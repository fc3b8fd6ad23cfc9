/**
 * A server that cannot listen, told as what to do: which port is taken (or not allowed), and the
 * option or variable that moves it. Node's listen errors carry the code, address and port; without
 * this the user saw Node's text (`listen EADDRINUSE: address already in use 127.0.0.1:8929`) or,
 * before the sandbox stopped using express's `app.listen`, a TypeError.
 */

/** `what` names the server ("the sandbox"), `setting` how to change its port ("--port or HOOKBOT_SANDBOX_PORT"). */
export function listenProblem(error: unknown, what: string, setting: string): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const { code, address, port } = error as { code?: unknown; address?: unknown; port?: unknown };
  if (typeof code !== 'string' || code === '' || typeof port !== 'number') return undefined;
  const where = typeof address === 'string' ? `${address}:${port}` : `port ${port}`;
  switch (code) {
    case 'EADDRINUSE':
      return `${what} cannot listen on ${where}: another program is using port ${port}. Stop that program, or choose another port with ${setting} (0 picks a free one).`;
    case 'EACCES':
      return `${what} cannot listen on ${where}: this user may not use port ${port} (ports below 1024 need privileges). Choose another port with ${setting}.`;
    case 'EADDRNOTAVAIL':
      return `${what} cannot listen on ${where}: this machine has no address ${String(address)}. Choose an address it has (127.0.0.1, or 0.0.0.0 for all).`;
    default:
      return undefined;
  }
}
