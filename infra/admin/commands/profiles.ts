import { readFile } from 'node:fs/promises';
import { DynamoDbProfileStore } from '../../../shared/adapters/dynamodb/dynamodb-profile-store.ts';
import { McpToolSource } from '../../../shared/adapters/tools/mcp-tool-source.ts';
import { saveProfile } from '../../../shared/app/profiles/save-profile.ts';
import {
  describeRefusal,
  type ProfileVerdict,
  validateProfiles,
} from '../../../shared/app/profiles/validate-profiles.ts';
import {
  type Config,
  ConfigError,
  type CredentialConfig,
  defaultConfig,
  parseConfig,
} from '../../../shared/config/config.ts';
import type { RemoteToolCheck } from '../../../shared/domain/tools.ts';
import { webhookPolicyFor } from '../../../shared/domain/webhook-address.ts';
import { table } from '../../text-table.ts';
import {
  type AdminIo,
  documentClient,
  isLoopback,
  type Options,
  tablesOf,
  UsageError,
} from '../admin-context.ts';

/** The `profiles` commands: validate a configuration, and put, get, list and delete saved profiles. */

const readConfig = async (path: string) => {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new UsageError(`Cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  try {
    return parseConfig(JSON.parse(text));
  } catch (error) {
    if (error instanceof SyntaxError) throw new ConfigError(`${path} is not valid JSON: ${error.message}`);
    throw error;
  }
};

const formatVerdict = (verdict: ProfileVerdict): string =>
  verdict.publishable
    ? `ok       ${verdict.profileId}: primary provider ${verdict.primaryProviderId}, answer ceiling ${verdict.ceilings.answer}, audit ceiling ${verdict.ceilings.audit}`
    : `REFUSED  ${describeRefusal(verdict)}`;

export const validateCommand = async (
  path: string | undefined,
  options: Options,
  io: AdminIo,
): Promise<number> => {
  if (path === undefined) throw new UsageError('profiles validate needs a configuration file');
  let verdicts: ProfileVerdict[];
  try {
    verdicts = validateProfiles(await readConfig(path));
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    if (options.json) io.out(JSON.stringify({ valid: false, error: error.message }, null, 2));
    else io.err(error.message);
    return 1;
  }
  const refused = verdicts.filter((verdict) => !verdict.publishable);
  if (options.json) {
    io.out(JSON.stringify({ valid: refused.length === 0, profiles: verdicts }, null, 2));
  } else {
    for (const verdict of verdicts) io.out(formatVerdict(verdict));
    io.out(
      refused.length === 0
        ? `${verdicts.length} profile(s) can be published.`
        : `${refused.length} of ${verdicts.length} profile(s) refused: fix the named settings before saving.`,
    );
  }
  return refused.length === 0 ? 0 : 1;
};

const profileStore = (options: Options, io: AdminIo) => {
  const client = documentClient(options, io.env);
  return { client, profiles: new DynamoDbProfileStore(client, tablesOf(options, io.env).state) };
};

const readJson = async (path: string): Promise<unknown> => {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new UsageError(`Cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ConfigError(`${path} is not valid JSON: ${(error as Error).message}`);
  }
};

/**
 * The MCP check of `profiles put` (docs/configuration.md "Saved profiles"): each server the profile
 * takes tools from is listed from this machine, through the SSRF guard of the installation (local
 * when its tables are on a loopback emulator), with the credentials this command's environment
 * holds (`{"env": …}`). A server whose credentials are only in Secrets Manager, read where
 * deployed, is not checked here: the command says so and saves.
 */
const mcpCheckOf = (config: Config, options: Options, io: AdminIo): RemoteToolCheck => {
  const endpoint = options.endpoint ?? io.env.AWS_ENDPOINT_URL_DYNAMODB ?? io.env.AWS_ENDPOINT_URL;
  const local = endpoint !== undefined && isLoopback(endpoint);
  const source = new McpToolSource({
    servers: config.mcpServers,
    policy: webhookPolicyFor(local, config.webhooks.allowLoopback),
    credentials: { localMode: true, env: io.env, extensionEndpoint: '', sessionToken: '' },
  });
  return {
    problemsOf: async (grants, profileId) => {
      const checked = Object.entries(grants).filter(([serverId]) => {
        const server = config.mcpServers[serverId];
        const credentials: CredentialConfig[] = [
          ...Object.values(server?.headers ?? {}).filter((value) => typeof value !== 'string'),
          ...(server?.oauth ? [server.oauth.clientSecret] : []),
        ];
        const secretOnly = credentials.some((credential) => credential.env === undefined);
        if (secretOnly)
          io.err(
            `not checked  mcpServers.${serverId}: its credentials are read from Secrets Manager where deployed`,
          );
        return !secretOnly;
      });
      return source.problemsOf(Object.fromEntries(checked), profileId);
    },
  };
};

export const profilesPutCommand = async (
  profileId: string | undefined,
  [path]: readonly (string | undefined)[],
  options: Options,
  io: AdminIo,
): Promise<number> => {
  if (profileId === undefined || path === undefined) {
    throw new UsageError('profiles put needs a profile id and a profile file');
  }
  const { client, profiles } = profileStore(options, io);
  try {
    const config = options.config === undefined ? defaultConfig : await readConfig(options.config);
    const result = await saveProfile(
      { profiles, clock: { now: () => new Date() }, remoteTools: mcpCheckOf(config, options, io) },
      config,
      profileId,
      await readJson(path),
    );
    if (options.json) {
      io.out(JSON.stringify(result, null, 2));
    } else if (result.saved) {
      io.out(`saved    ${formatVerdict(result.verdict).replace(/^ok\s+/, '')}`);
      if (config.profiles[profileId] !== undefined)
        io.out(`It replaces the configuration's profile "${profileId}" where it is served (0024).`);
    } else if (result.problems !== undefined) {
      for (const problem of result.problems) io.out(`REFUSED  ${problem}`);
      io.out('Not saved: its MCP tools cannot be served; fix the named settings first.');
    } else {
      io.out(`${formatVerdict(result.verdict)}\nNot saved: fix the named setting first.`);
    }
    return result.saved ? 0 : 1;
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    if (options.json) io.out(JSON.stringify({ saved: false, error: error.message }, null, 2));
    else io.err(`${error.message}\nNot saved.`);
    return 1;
  } finally {
    client.destroy();
  }
};

export const profilesGetCommand = async (profileId: string | undefined, options: Options, io: AdminIo) => {
  if (profileId === undefined) throw new UsageError('profiles get needs a profile id');
  const { client, profiles } = profileStore(options, io);
  try {
    const stored = await profiles.get(profileId);
    if (stored === undefined) {
      if (options.json) io.out(JSON.stringify({ error: 'PROFILE_NOT_FOUND', profileId }, null, 2));
      else io.err(`No saved profile "${profileId}".`);
      return 1;
    }
    // The saved entry itself, so `profiles get x > x.json` round-trips through `profiles put`.
    io.out(JSON.stringify(options.json ? stored : stored.profile, null, 2));
    return 0;
  } finally {
    client.destroy();
  }
};

export const profilesDeleteCommand = async (profileId: string | undefined, options: Options, io: AdminIo) => {
  if (profileId === undefined) throw new UsageError('profiles delete needs a profile id');
  const { client, profiles } = profileStore(options, io);
  try {
    const deleted = await profiles.delete(profileId);
    if (options.json) io.out(JSON.stringify({ deleted, profileId }, null, 2));
    else if (deleted) io.out(`deleted  ${profileId}`);
    else io.err(`No saved profile "${profileId}".`);
    return deleted ? 0 : 1;
  } finally {
    client.destroy();
  }
};

export const profilesListCommand = async (extra: string | undefined, options: Options, io: AdminIo) => {
  if (extra !== undefined) throw new UsageError('profiles list takes no arguments');
  const { client, profiles } = profileStore(options, io);
  try {
    const stored = await profiles.list();
    if (options.json) {
      io.out(JSON.stringify({ profiles: stored }, null, 2));
      return 0;
    }
    const text = (value: unknown): string => (typeof value === 'string' ? value : '-');
    for (const line of table(
      ['PROFILE', 'NAME', 'PROVIDERS', 'PRIVACY', 'UPDATED'],
      stored.map(({ profileId, profile, updatedAt }) => [
        profileId,
        text(profile.name),
        Array.isArray(profile.providers) ? profile.providers.join(',') : '-',
        text(profile.privacyLevel),
        updatedAt,
      ]),
    )) {
      io.out(line);
    }
    io.out(`${stored.length} saved profile(s).`);
    return 0;
  } finally {
    client.destroy();
  }
};
