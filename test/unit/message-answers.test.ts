import { describe, expect, it } from 'vitest';
import { mayAnswerWithMessage } from '../../functions/rpc/message-answers.ts';
import { parseConfig } from '../../shared/config/config.ts';

/**
 * Which streaming sends wait for their run before the first event (decision 0067): only those a
 * provider of the profile's chain may answer with a Message. A wrong `true` delays a stream's
 * first event until its run settles; a wrong `false` streams a Message answer as a task.
 */
const config = parseConfig({
  providers: {
    tck: { type: 'scripted', behavior: 'tck' },
    echo: { type: 'scripted', behavior: 'echo' },
    model: { type: 'bedrock', model: 'anthropic.claude' },
  },
  profiles: {
    tck: { name: 'TCK', description: 'TCK scenarios', providers: ['tck'] },
    echo: { name: 'Echo', description: 'Echo', providers: ['echo'] },
    fallback: { name: 'Model then TCK', description: 'A fallback chain', providers: ['model', 'tck'] },
    model: { name: 'Model', description: 'A model', providers: ['model'] },
  },
});

const message = (messageId: string) => ({ messageId, role: 'ROLE_USER' as const, parts: [{ text: 'hi' }] });

describe('mayAnswerWithMessage', () => {
  it('is true for the tck-message-response scenario of a chain with the tck behaviour', () => {
    expect(mayAnswerWithMessage(config, 'tck', message('tck-message-response-1'))).toBe(true);
    expect(mayAnswerWithMessage(config, 'fallback', message('tck-message-response-1'))).toBe(true);
  });

  it('is false for every other scenario, behaviour, model provider and unknown profile', () => {
    expect(mayAnswerWithMessage(config, 'tck', message('test-resubscribe-message-id-1'))).toBe(false);
    expect(mayAnswerWithMessage(config, 'tck', message('tck-stream-001'))).toBe(false);
    expect(mayAnswerWithMessage(config, 'echo', message('tck-message-response-1'))).toBe(false);
    expect(mayAnswerWithMessage(config, 'model', message('tck-message-response-1'))).toBe(false);
    expect(mayAnswerWithMessage(config, 'nobody', message('tck-message-response-1'))).toBe(false);
  });
});
