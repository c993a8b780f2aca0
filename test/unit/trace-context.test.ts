import { describe, expect, it } from 'vitest';
import { traceOfStreamRecord, validTraceparent } from '../../shared/adapters/trace-context.ts';

/** The caller's traceparent is carried only when it is one (W3C Trace Context §3.2, decision 0059). */
describe('validTraceparent', () => {
  const valid = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

  it('keeps a W3C traceparent, trimmed and lower-cased', () => {
    expect(validTraceparent(valid)).toBe(valid);
    expect(validTraceparent(`  ${valid.toUpperCase()} `)).toBe(valid);
  });

  it('drops anything else: other shapes, version ff, all-zero trace or parent ids', () => {
    for (const value of [
      undefined,
      '',
      'hello',
      `${valid}-extra`,
      `${valid}\n`.repeat(2),
      valid.replace('00-', 'ff-'),
      `00-${'0'.repeat(32)}-00f067aa0ba902b7-01`,
      `00-4bf92f3577b34da6a3ce929d0e0e4736-${'0'.repeat(16)}-01`,
      '00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01',
    ]) {
      expect(validTraceparent(value), String(value)).toBeUndefined();
    }
  });

  it("reads a stream record's trace from its key and the image's traceparent, which it validates too", () => {
    const record = (tp: string) => ({
      dynamodb: { Keys: { pk: { S: 'TASK#t-1' }, sk: { S: 'TASK' } }, NewImage: { traceparent: { S: tp } } },
    });
    expect(traceOfStreamRecord(record(valid))).toEqual({ correlation_id: 't-1', traceparent: valid });
    expect(traceOfStreamRecord(record('not-a-trace'))).toEqual({ correlation_id: 't-1' });
  });
});
