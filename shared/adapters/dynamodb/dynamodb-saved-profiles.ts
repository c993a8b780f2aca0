import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { SavedProfiles, StoredProfile } from '../../domain/operations.ts';
import { type ProfileItem, profileItemSchema } from './entities.ts';
import { keys } from './keys.ts';
import { queryAll } from './query-all.ts';

export const fromProfileItem = (item: ProfileItem): StoredProfile => ({
  profileId: item.profileId,
  profile: item.profile,
  updatedAt: item.updatedAt,
});

/**
 * The saved profiles as the rpc function reads them (docs/operations.md, "Saved profiles"): the state table's
 * `PROFILES` partition in one query. Read only; writing them is the admin command's
 * (`DynamoDbProfileStore`), which no public function bundles (test/infra/admin-surface.test.ts).
 */
export class DynamoDbSavedProfiles implements SavedProfiles {
  constructor(
    protected readonly client: DynamoDBDocumentClient,
    protected readonly tableName: string,
  ) {}

  async list(): Promise<StoredProfile[]> {
    const items = await queryAll(this.client, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': keys.profile('').pk, ':prefix': keys.profilePrefix },
      ConsistentRead: true,
    });
    return items.map((item) => fromProfileItem(profileItemSchema.parse(item)));
  }
}
