import { randomUUID } from 'node:crypto';
import type { Clock, IdGenerator } from '../domain/ports.ts';

/** The machine's clock and random ids, as the domain's ports. */
export const systemClock: Clock = { now: () => new Date() };
export const uuidGenerator: IdGenerator = { newId: () => randomUUID() };
