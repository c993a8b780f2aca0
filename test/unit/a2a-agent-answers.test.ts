import { Task } from '@a2a-js/sdk';
import { describe, expect, it } from 'vitest';
import { answerOf, delegatedMessageId } from '../../shared/adapters/tools/a2a-agent-source.ts';

/**
 * What the model reads of a remote agent's task (docs/configuration.md `a2aAgents`): its id and
 * state, its status message, its artifacts (files as name, type and size, never their bytes), and
 * for a task that asks for input, how to answer it.
 */
describe('a delegated task as the model reads it', () => {
  it('an input-required task: its question and how to answer it with the same taskId', () => {
    const answer = answerOf(
      Task.fromJSON({
        id: 'remote-1',
        contextId: 'ctx',
        status: {
          state: 'TASK_STATE_INPUT_REQUIRED',
          message: { messageId: 'q', role: 'ROLE_AGENT', parts: [{ text: 'Which city?' }] },
        },
      }),
    );
    expect(answer).toEqual({
      taskId: 'remote-1',
      state: 'input-required',
      message: [{ text: 'Which city?' }],
      note: 'The agent asks for input: answer by calling this tool again with this taskId and your message.',
    });
  });

  it('a completed task: text and data parts as they are, a file as its name, type and size only', () => {
    const answer = answerOf(
      Task.fromJSON({
        id: 'remote-2',
        contextId: 'ctx',
        status: { state: 'TASK_STATE_COMPLETED' },
        artifacts: [
          {
            artifactId: 'a',
            name: 'report',
            parts: [
              { text: 'done' },
              { data: { rows: 3 } },
              {
                raw: Buffer.from('secret bytes').toString('base64'),
                mediaType: 'image/png',
                filename: 'x.png',
              },
            ],
          },
        ],
      }),
    );
    expect(answer).toEqual({
      taskId: 'remote-2',
      state: 'completed',
      artifacts: [
        {
          name: 'report',
          parts: [
            { text: 'done' },
            { data: { rows: 3 } },
            {
              file: { name: 'x.png', mediaType: 'image/png', bytes: 12, note: 'binary content is not shown' },
            },
          ],
        },
      ],
    });
    expect(JSON.stringify(answer)).not.toContain(Buffer.from('secret bytes').toString('base64'));
  });

  it('a task still working says how to read it later', () => {
    const answer = answerOf(
      Task.fromJSON({ id: 'remote-3', contextId: 'ctx', status: { state: 'TASK_STATE_WORKING' } }),
    );
    expect(answer.state).toBe('working');
    expect(answer.note).toContain('taskId and no message');
  });

  it('the messageId of a step is the same however often it is derived, and differs per run, round and call', () => {
    const id = delegatedMessageId('run-1', 0, 'call-1');
    expect(delegatedMessageId('run-1', 0, 'call-1')).toBe(id);
    expect(
      new Set([
        id,
        delegatedMessageId('run-2', 0, 'call-1'),
        delegatedMessageId('run-1', 1, 'call-1'),
        delegatedMessageId('run-1', 0, 'call-2'),
      ]).size,
    ).toBe(4);
    expect(id).toMatch(/^dlg-[0-9a-f]{32}$/);
  });
});
