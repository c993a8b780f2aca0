import { type DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { ProfileStore, StoredProfile } from '../../domain/operations.ts';
import { keys, type ProfileItem, profileItemSchema } from './entities.ts';
import { queryAll } from './query-all.ts';

const fromItem = (item: ProfileItem): StoredProfile => ({
  profileId: item.profileId,
  profile: item.profile,
  updatedAt: item.updatedAt,
});

/** Saved profiles in the state table's `PROFILES` partition (decision 0016). */
export class DynamoDbProfileStore implements ProfileStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async put(profile: StoredProfile): Promise<void> {
    const item: ProfileItem = {
      ...keys.profile(profile.profileId),
      profileId: profile.profileId,
      profile: profile.profile as ProfileItem['profile'],
      updatedAt: profile.updatedAt,
    };
    await this.client.send(new PutCommand({ TableName: this.tableName, Item: item }));
  }

  async get(profileId: string): Promise<StoredProfile | undefined> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: keys.profile(profileId), ConsistentRead: true }),
    );
    return Item ? fromItem(profileItemSchema.parse(Item)) : undefined;
  }

  async list(): Promise<StoredProfile[]> {
    const items = await queryAll(this.client, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': 'PROFILES', ':prefix': keys.profilePrefix },
      ConsistentRead: true,
    });
    return items.map((item) => fromItem(profileItemSchema.parse(item)));
  }
}
