// The storage conformance suite on the AWS adapter: DynamoDB on DynamoDB Local and S3 on
// moto_server (the run's emulators, or AWS_ENDPOINT_URL, e.g. LocalStack), with fresh tables
// and bucket for the run.
import { newAwsTestStorage } from '../support/aws-emulator.js';
import { awsEndpoints } from '../support/aws-endpoints.js';
import { runStorageConformance } from './storage.conformance.js';

runStorageConformance('aws', () => newAwsTestStorage(awsEndpoints()));
