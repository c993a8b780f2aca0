/** The alias infra/bundling.ts sets for lazy-event-streams.ts: the real module's EventStreamSerde. */
declare module 'a2a-real-event-stream-serde' {
  export { EventStreamSerde } from '@smithy/core/event-streams';
}
