import { OpenAiProvider } from '../shared/adapters/providers/openai-provider.ts';
import { ScriptedProvider } from '../shared/adapters/providers/scripted-provider.ts';
import { extensionApiKey } from '../shared/adapters/providers/secret-api-key.ts';
import { lazyScriptedToolModel } from '../shared/adapters/tools/lazy-tool-sources.ts';
import { ToolLoopAgent } from '../shared/app/runs/tool-loop-agent.ts';
import type { ProviderConfig } from '../shared/config/config.ts';
import type { RuntimeEnv } from '../shared/config/runtime-env.ts';
import type { JsonObject } from '../shared/domain/a2a.ts';
import type { AgentProvider } from '../shared/domain/ports.ts';

/** Builds the Bedrock provider of an id: only the executor's bundle holds the Bedrock client. */
export type BedrockProviderFactory = (
  providerId: string,
  provider: Extract<ProviderConfig, { type: 'bedrock' }>,
) => AgentProvider;

/**
 * The provider of each configured id. Bedrock and OpenAI-compatible models run under the tool
 * loop; their SDK client makes one attempt, since the fallback is the retry.
 * An OpenAI key comes, in a deployment, from the secret `apiKeySecret` names, through the
 * Parameters and Secrets Lambda Extension (docs/deployment.md); in local mode, and without a secret,
 * from the variable `apiKeyEnv` names, whose absence fails the cold start with its name.
 */
export const createProviderFor = (
  env: RuntimeEnv,
  processEnv: NodeJS.ProcessEnv = process.env,
  /** Absent in the rpc, which runs blocking sends' runs: Bedrock providers have no adapter in its build. */
  bedrock?: BedrockProviderFactory,
): ((providerId: string) => AgentProvider) => {
  const providers = new Map<string, AgentProvider>();
  for (const [providerId, provider] of Object.entries(env.config.providers)) {
    if (provider.type === 'scripted' && provider.behavior === 'call-tool') {
      if (provider.tool === undefined)
        throw new Error(`providers.${providerId}.tool is required by the call-tool behaviour`);
      const agent = new ToolLoopAgent(
        lazyScriptedToolModel(
          providerId,
          provider.tool,
          provider.arguments as JsonObject | undefined,
          provider.answerInput,
          { paceMs: provider.paceMs },
        ),
      );
      // Counted like every scripted provider, so the proofs see a run that called it twice (I-ONCE).
      providers.set(providerId, {
        run: (request) => {
          ScriptedProvider.countCall(request.runId);
          return agent.run(request);
        },
      });
    } else if (provider.type === 'scripted') {
      const { behavior, paceMs, failAfterWords } = provider;
      providers.set(
        providerId,
        new ScriptedProvider(providerId, behavior, {
          paceMs,
          ...(failAfterWords !== undefined ? { failAfterWords } : {}),
        }),
      );
    }
    if (provider.type === 'bedrock' && bedrock) providers.set(providerId, bedrock(providerId, provider));
    if (provider.type === 'openai') {
      const secret = env.localMode ? undefined : provider.apiKeySecret;
      const apiKey = secret
        ? extensionApiKey({
            providerId,
            ...secret,
            endpoint: `http://localhost:${processEnv.PARAMETERS_SECRETS_EXTENSION_HTTP_PORT ?? 2773}`,
            sessionToken: processEnv.AWS_SESSION_TOKEN ?? '',
          })
        : provider.apiKeyEnv && processEnv[provider.apiKeyEnv];
      if (provider.apiKeyEnv && !apiKey) {
        throw new Error(
          `Missing environment variable ${provider.apiKeyEnv} (API key of provider ${providerId})`,
        );
      }
      providers.set(
        providerId,
        new ToolLoopAgent(
          new OpenAiProvider({
            providerId,
            baseUrl: provider.baseUrl,
            model: provider.model,
            timeoutMs: provider.timeoutMs,
            ...(apiKey ? { apiKey } : {}),
          }),
        ),
      );
    }
  }
  return (providerId) => {
    const provider = providers.get(providerId);
    if (provider === undefined) throw new Error(`Provider ${providerId} has no adapter in this build`);
    return provider;
  };
};
