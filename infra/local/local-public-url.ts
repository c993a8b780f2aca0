import type { Config } from '../../shared/config/config.ts';

/**
 * `npm start`'s `publicUrl` (docs/configuration.md, "Other top-level settings"): the configured
 * one, else the stack's own address, so a run waiting for a delegated task is woken by the remote
 * task's push notification (`/callbacks/delegations/…`, docs/reliability.md "Delegated calls") without configuration. A
 * wildcard listen address is reached at loopback. With `--port 0` the port is known only after
 * the handlers read the configuration: no `publicUrl`, the reaper wakes waiting runs.
 */
export const withLocalPublicUrl = (config: Config, host: string, port: number): Config => {
  if (config.publicUrl !== undefined || port === 0) return config;
  const reachable = host === '0.0.0.0' || host === '::' || host === '' ? '127.0.0.1' : host;
  const authority = reachable.includes(':') ? `[${reachable}]` : reachable;
  return { ...config, publicUrl: `http://${authority}:${port}` };
};
