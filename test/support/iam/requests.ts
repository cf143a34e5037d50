/**
 * What IAM authorizes for each AWS request Sluice's code sends: an SDK command (name and
 * input) becomes the IAM requests AWS evaluates for it, each an action on a resource ARN with
 * the context keys the stack's conditions read.
 *
 * - A `TransactWriteItems` is no action of its own: AWS authorizes each item (PutItem,
 *   UpdateItem, DeleteItem, ConditionCheckItem on its table). `BatchGetItem` and
 *   `BatchWriteItem` are actions of their own, checked on every table they name.
 * - Every item request carries `dynamodb:LeadingKeys` (the partition keys it touches), so a
 *   grant narrowed by key prefix is evaluated as AWS would.
 * - S3 object requests name `bucket/key`; a list names the bucket with `s3:prefix`.
 * - KMS requests name the key; PostToConnection names the `@connections` resource.
 *
 * The physical names the tests use (random tables, buckets, keys) are mapped to the ARNs the
 * synthesized template gives the same logical resources ({@link ResourceArns}).
 *
 * @example
 * ```ts
 * iamRequestsOf('UpdateItemCommand', { TableName: 't-log', Key: { pk: { S: 'SEQ#p' } } }, arns);
 * // [{ action: 'dynamodb:UpdateItem', resource: 'arn:aws:dynamodb:…:table/Sluice-LogTable…', context: { 'dynamodb:LeadingKeys': ['SEQ#p'] } }]
 * ```
 */
import type { TableName } from '../../../server/storage/port.js';
import type { IamRequest } from './evaluate.js';

/** The deployed ARNs requests are checked against, and how to map the tests' physical names to them. */
export interface ResourceArns {
  /** The template's table ARN of each logical table. */
  tables: Record<TableName, string>;
  /** The template's bucket ARN (`arn:aws:s3:::name`). */
  bucket: string;
  /** The template's payload key ARN, when the variant has one. */
  kmsKey?: string | undefined;
  /** `arn:…:execute-api:region:account:apiId/stage` of the WebSocket stage, when there is one. */
  connections?: string | undefined;
  /** Which logical table a physical table name of the tests is. */
  tableOf(physicalName: string): TableName | undefined;
}

type Av = Record<string, { S?: string } | undefined>;
interface Input {
  [k: string]: unknown;
}

const leading = (pks: (string | undefined)[]): { 'dynamodb:LeadingKeys': string[] } => ({
  'dynamodb:LeadingKeys': [...new Set(pks.filter((p): p is string => p !== undefined))],
});
/** A string field of a command's input. */
const str = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v));
const pkOf = (key: unknown): string | undefined => (key as Av | undefined)?.['pk']?.S;

/**
 * The IAM requests AWS evaluates for one SDK command, or throws for a command this map does not
 * know (a new kind of call must be mapped, not passed).
 */
export function iamRequestsOf(command: string, input: Input, arns: ResourceArns): IamRequest[] {
  const name = command.replace(/Command$/, '');
  const table = (physicalName: unknown): string => {
    const t = arns.tableOf(String(physicalName));
    if (!t) throw new Error(`a request on table ${String(physicalName)}, which is none of the test tables`);
    return arns.tables[t];
  };
  const object = (key: unknown): string => `${arns.bucket}/${String(key)}`;
  const kms = (): string => {
    if (!arns.kmsKey) throw new Error(`a ${name} on KMS, but the template under test has no payload key`);
    return arns.kmsKey;
  };
  switch (name) {
    case 'GetItem':
    case 'DeleteItem':
    case 'UpdateItem':
      return [
        { action: `dynamodb:${name}`, resource: table(input['TableName']), context: leading([pkOf(input['Key'])]) },
      ];
    case 'PutItem':
      return [
        { action: 'dynamodb:PutItem', resource: table(input['TableName']), context: leading([pkOf(input['Item'])]) },
      ];
    case 'Query':
    case 'Scan': {
      const index = input['IndexName'] ? `/index/${str(input['IndexName'])}` : '';
      const values = input['ExpressionAttributeValues'] as Av | undefined;
      return [
        {
          action: `dynamodb:${name}`,
          resource: `${table(input['TableName'])}${index}`,
          context: name === 'Query' ? leading([values?.[':pk']?.S]) : {},
        },
      ];
    }
    case 'BatchGetItem':
      return Object.entries(input['RequestItems'] as Record<string, { Keys: unknown[] }>).map(([t, r]) => ({
        action: 'dynamodb:BatchGetItem',
        resource: table(t),
        context: leading(r.Keys.map(pkOf)),
      }));
    case 'BatchWriteItem':
      return Object.entries(
        input['RequestItems'] as Record<string, { PutRequest?: { Item: unknown }; DeleteRequest?: { Key: unknown } }[]>,
      ).map(([t, rs]) => ({
        action: 'dynamodb:BatchWriteItem',
        resource: table(t),
        context: leading(rs.map((r) => pkOf(r.PutRequest?.Item ?? r.DeleteRequest?.Key))),
      }));
    case 'TransactWriteItems':
      return (input['TransactItems'] as Record<string, { TableName: string; Key?: unknown; Item?: unknown }>[]).map(
        (item) => {
          const [kind, op] = Object.entries(item)[0]!;
          const action = {
            Put: 'PutItem',
            Update: 'UpdateItem',
            Delete: 'DeleteItem',
            ConditionCheck: 'ConditionCheckItem',
          }[kind];
          if (!action) throw new Error(`a transaction item of kind ${kind}`);
          return {
            action: `dynamodb:${action}`,
            resource: table(op.TableName),
            context: leading([pkOf(op.Key ?? op.Item)]),
          };
        },
      );
    case 'TransactGetItems':
      return (input['TransactItems'] as { Get: { TableName: string; Key: unknown } }[]).map(({ Get }) => ({
        action: 'dynamodb:GetItem',
        resource: table(Get.TableName),
        context: leading([pkOf(Get.Key)]),
      }));
    case 'PutObject':
    case 'GetObject':
    case 'DeleteObject':
      return [{ action: `s3:${name}`, resource: object(input['Key']) }];
    // HEAD is authorized as a read of the object.
    case 'HeadObject':
      return [{ action: 's3:GetObject', resource: object(input['Key']) }];
    case 'DeleteObjects':
      return ((input['Delete'] as { Objects: { Key: string }[] }).Objects ?? []).map((o) => ({
        action: 's3:DeleteObject',
        resource: object(o.Key),
      }));
    case 'ListObjectsV2':
    case 'ListObjects':
      return [
        {
          action: 's3:ListBucket',
          resource: arns.bucket,
          context: input['Prefix'] !== undefined ? { 's3:prefix': str(input['Prefix']) } : {},
        },
      ];
    case 'GenerateDataKey':
    case 'Decrypt':
    case 'Encrypt':
      return [{ action: `kms:${name}`, resource: kms() }];
    case 'PostToConnection':
    case 'GetConnection':
    case 'DeleteConnection': {
      if (!arns.connections) throw new Error(`a ${name}, but the template under test has no WebSocket stage`);
      const method = { PostToConnection: 'POST', GetConnection: 'GET', DeleteConnection: 'DELETE' }[name];
      return [
        {
          action: 'execute-api:ManageConnections',
          resource: `${arns.connections}/${method}/@connections/${String(input['ConnectionId'])}`,
        },
      ];
    }
    default:
      throw new Error(`test/support/iam/requests.ts does not know what IAM checks for ${command}: map it`);
  }
}

/** Lambda REST API operations sent as signed fetches, by method and path (service/adapters/lambda-account.ts). */
const LAMBDA_REST: Record<string, IamRequest> = {
  'GET /2016-08-19/account-settings/': { action: 'lambda:GetAccountSettings', resource: '*' },
};

/**
 * The IAM request of a SigV4-signed fetch: its service from the credential scope of the
 * Authorization header, its operation from method and path. Throws for one it does not know.
 *
 * @example
 * ```ts
 * iamRequestOfSignedFetch('GET', new URL('https://lambda.eu-west-1.amazonaws.com/2016-08-19/account-settings/'), headers);
 * // { action: 'lambda:GetAccountSettings', resource: '*' }
 * ```
 */
export function iamRequestOfSignedFetch(method: string, url: URL, headers: Record<string, string>): IamRequest {
  const auth = Object.entries(headers).find(([k]) => k.toLowerCase() === 'authorization')?.[1] ?? '';
  const scope = /Credential=[^/]+\/\d{8}\/([^/]+)\/([^/]+)\/aws4_request/.exec(auth);
  if (!scope) throw new Error(`a fetch to ${url.href} without a SigV4 signature`);
  const service = scope[2];
  const op = service === 'lambda' ? LAMBDA_REST[`${method} ${url.pathname}`] : undefined;
  if (!op)
    throw new Error(`test/support/iam/requests.ts does not know the ${service} request ${method} ${url.pathname}`);
  return op;
}
