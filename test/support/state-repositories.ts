import { ChunkedContentSealer } from '../../shared/adapters/dynamodb/dynamodb-chunked-sealer.ts';
import { DynamoDbJournalRepository } from '../../shared/adapters/dynamodb/dynamodb-journal-repository.ts';
import { DynamoDbTaskRepository } from '../../shared/adapters/dynamodb/dynamodb-task-repository.ts';
import { KmsSealer } from '../../shared/adapters/kms-sealer.ts';
import { TaskContentCodec } from '../../shared/app/tasks/task-content.ts';
import type { TestResources } from './local-guard.ts';

/** The state and journal repositories and a KMS-sealing codec over a test's emulator resources. */
export const stateRepositories = (env: TestResources) => ({
  tasks: new DynamoDbTaskRepository(env.clients.doc, env.resources.tables.State.name),
  journal: new DynamoDbJournalRepository(env.clients.doc, env.resources.tables.Journal.name),
  codec: new TaskContentCodec(
    new ChunkedContentSealer(
      new KmsSealer({ kms: env.clients.kms, keyId: env.resources.key.keyId, installation: 'test' }),
      env.clients.doc,
      env.resources.tables.State.name,
    ),
  ),
});
