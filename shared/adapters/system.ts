import { randomUUID } from 'node:crypto';
import type { Clock, IdGenerator } from '../domain/ports.ts';

/** The machine's clock and random ids, as the domain's ports. */
export const systemClock: Clock = { now: () => new Date() };
export const uuidGenerator: IdGenerator = { newId: () => randomUUID() };
/** The machine's timer, for back-offs and waits the use cases take injected. */
export const systemSleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
