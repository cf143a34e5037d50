import { describe, expect, it } from 'vitest';
import { awsStorageConfigFromEnv, ITEM_TABLE_SCHEMA, TTL_ATTRIBUTE } from '../../server/storage/aws/index.js';

const full = {
  SLUICE_TABLE_LOG: 'l',
  SLUICE_TABLE_META: 'm',
  SLUICE_TABLE_DEDUP: 'd',
  SLUICE_TABLE_LEASES: 'le',
  SLUICE_TABLE_CLAIMS: 'c',
  SLUICE_TABLE_DLQ: 'q',
  SLUICE_BUCKET: 'b',
};

describe('awsStorageConfigFromEnv', () => {
  it('is undefined when nothing is set (run embedded)', () => {
    expect(awsStorageConfigFromEnv({})).toBeUndefined();
    expect(awsStorageConfigFromEnv({ SLUICE_BUCKET: '' })).toBeUndefined();
  });

  it('maps every variable to its table and the bucket', () => {
    expect(awsStorageConfigFromEnv({ ...full, OTHER: 'x' })).toEqual({
      tables: { log: 'l', meta: 'm', dedup: 'd', leases: 'le', claims: 'c', dlq: 'q' },
      bucket: 'b',
    });
  });

  it('names the missing variables when only some are set', () => {
    const { SLUICE_TABLE_DLQ: _dlq, SLUICE_BUCKET: _bucket, ...partial } = full;
    expect(() => awsStorageConfigFromEnv(partial)).toThrow(/missing SLUICE_TABLE_DLQ, SLUICE_BUCKET/);
  });
});

describe('ITEM_TABLE_SCHEMA', () => {
  it('keys every table by pk/sk strings and expires on ttl', () => {
    expect(ITEM_TABLE_SCHEMA.partitionKey).toEqual({ name: 'pk', type: 'S' });
    expect(ITEM_TABLE_SCHEMA.sortKey).toEqual({ name: 'sk', type: 'S' });
    expect(ITEM_TABLE_SCHEMA.timeToLiveAttribute).toBe(TTL_ATTRIBUTE);
    expect(TTL_ATTRIBUTE).toBe('ttl');
  });
});
