import { BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime';
import { BedrockProvider } from '../../shared/adapters/providers/bedrock-provider.ts';
import { ToolLoopAgent } from '../../shared/app/runs/tool-loop-agent.ts';
import type { RuntimeEnv } from '../../shared/config/runtime-env.ts';
import type { AgentProvider } from '../../shared/domain/ports.ts';
import { type BedrockProviderFactory, createProviderFor as createProviders } from '../providers.ts';

/** Bedrock models under the tool loop; its SDK client makes one attempt (the fallback is the retry). */
const bedrockProvider: BedrockProviderFactory = (providerId, provider) =>
  new ToolLoopAgent(
    new BedrockProvider({
      providerId,
      model: provider.model,
      client: new BedrockRuntimeClient({
        ...(provider.region ? { region: provider.region } : {}),
        maxAttempts: 1,
      }),
      timeoutMs: provider.timeoutMs,
    }),
  );

/** The executor's providers: every configured type, Bedrock included (functions/providers.ts). */
export const createProviderFor = (
  env: RuntimeEnv,
  processEnv: NodeJS.ProcessEnv = process.env,
): ((providerId: string) => AgentProvider) => createProviders(env, processEnv, bedrockProvider);
