import { readFile } from 'node:fs/promises';
import { DynamoDbProfileStore } from '../../../shared/adapters/dynamodb/dynamodb-profile-store.ts';
import { A2aAgentSource } from '../../../shared/adapters/tools/a2a-agent-source.ts';
import type { CredentialSources } from '../../../shared/adapters/tools/mcp-credentials.ts';
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
import { type WebhookPolicy, webhookPolicyFor } from '../../../shared/domain/webhook-address.ts';
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

/** Where the checks of `profiles put` reach out from: this machine, as the installation would. */
interface Reach {
  readonly policy: WebhookPolicy;
  readonly credentials: CredentialSources;
}

/** The SSRF guard of the installation (local when its tables are on a loopback emulator), this environment's credentials. */
const reachOf = (config: Config, options: Options, io: AdminIo): Reach => {
  const endpoint = options.endpoint ?? io.env.AWS_ENDPOINT_URL_DYNAMODB ?? io.env.AWS_ENDPOINT_URL;
  const local = endpoint !== undefined && isLoopback(endpoint);
  return {
    policy: webhookPolicyFor(local, config.webhooks.allowLoopback),
    credentials: { localMode: true, env: io.env, extensionEndpoint: '', sessionToken: '' },
  };
};

/**
 * Whether a server's or agent's credentials can be read here: one only in Secrets Manager, read
 * where deployed, is not checked; the command says so on stderr and saves.
 */
const checkableHere = (
  setting: 'mcpServers' | 'a2aAgents',
  id: string,
  remote: Pick<Config['mcpServers'][string], 'headers' | 'oauth'> | undefined,
  io: AdminIo,
): boolean => {
  const credentials: CredentialConfig[] = [
    ...Object.values(remote?.headers ?? {}).filter((value) => typeof value !== 'string'),
    ...(remote?.oauth ? [remote.oauth.clientSecret] : []),
  ];
  const secretOnly = credentials.some((credential) => credential.env === undefined);
  if (secretOnly)
    io.err(`not checked  ${setting}.${id}: its credentials are read from Secrets Manager where deployed`);
  return !secretOnly;
};

/**
 * A check of `profiles put` (docs/configuration.md "Saved profiles") over the grants whose
 * credentials can be read here (`checkableHere`): the MCP servers a profile takes tools from are
 * listed, the A2A agents it delegates to have their cards read, from this machine with the reach
 * of `reachOf` (the SSRF guard, and each remote's own deadline and headers as a run uses them).
 */
const checkOf = <Grants extends Readonly<Record<string, unknown>>>(
  setting: 'mcpServers' | 'a2aAgents',
  remotes: Readonly<Record<string, Pick<Config['mcpServers'][string], 'headers' | 'oauth'>>>,
  source: { problemsOf(grants: Grants, profileId: string): Promise<string[]> },
  io: AdminIo,
): { problemsOf(grants: Grants, profileId: string): Promise<string[]> } => ({
  problemsOf: async (grants, profileId) => {
    const checked = Object.entries(grants).filter(([id]) => checkableHere(setting, id, remotes[id], io));
    return source.problemsOf(Object.fromEntries(checked) as Grants, profileId);
  },
});

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
    const reach = reachOf(config, options, io);
    const result = await saveProfile(
      {
        profiles,
        clock: { now: () => new Date() },
        remoteTools: checkOf(
          'mcpServers',
          config.mcpServers,
          new McpToolSource({ servers: config.mcpServers, ...reach }),
          io,
        ),
        remoteAgents: checkOf(
          'a2aAgents',
          config.a2aAgents,
          new A2aAgentSource({ agents: config.a2aAgents, ...reach }),
          io,
        ),
      },
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
      io.out('Not saved: its MCP tools or A2A agents cannot be served; fix the named settings first.');
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
