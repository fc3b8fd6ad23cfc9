/**
 * The public-listener guard (receiver/exposure.ts) as `serve` and `start` say it, before anything
 * is opened: with where the address came from (a variable, a line of the file, or the container
 * default and what detected the container), so that the variable to change is named. Loaded by
 * those commands only (it brings the receiver), so that `hookbot --help` stays fast.
 */
import type { Config, ConfigSource, ConfigSources } from '../config/index.ts';
import { describeSource } from '../config/index.ts';
import { exposureProblem } from '../receiver/index.ts';

export function publicListenerProblem(loaded: {
  config: Config;
  sources: ConfigSources;
  container: { inContainer: boolean; because: string };
}): string | undefined {
  const { config, sources, container } = loaded;
  const auth = config.server.status_auth;
  return exposureProblem({
    host: config.server.host,
    authenticated: Boolean(auth.username && auth.password),
    publicOps: config.server.public_ops,
    hostOrigin: hostOrigin(sources['server.host'], container),
  });
}

function hostOrigin(
  source: ConfigSource | undefined,
  container: { inContainer: boolean; because: string },
): string | undefined {
  if (source?.from === 'env') return `${source.name} sets it`;
  if (source?.from === 'file') return `${describeSource(source)} sets it (server.host)`;
  if (container.inContainer)
    return (
      `hookbot runs in a container (${container.because}; HOOKBOT_IN_DOCKER=0 says it does not), ` +
      'where serving a configured server listens on every interface by default so that a published port reaches it'
    );
  return undefined;
}
