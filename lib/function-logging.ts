/**
 * How every Sluice function logs (docs/DEPLOYING.md, "Logs, and what they cost"): Lambda's JSON
 * log format with system logs at WARN, so the START/END/REPORT lines of every invocation (the
 * `platform.start` and `platform.report` records, INFO) are not ingested. They are most of what a warm invocation
 * logs (docs/DEPLOYING.md, "Costs per million messages"); what REPORT carried is in Lambda's
 * own metrics (`Duration`, `Invocations`, `Errors`, `Throttles`). Application logs are
 * filtered at the level Powertools is told to log at, so `POWERTOOLS_LOG_LEVEL` stays the one
 * knob. EMF lines carry no level, which Lambda files as INFO: they pass at INFO and below.
 */
import * as lambda from 'aws-cdk-lib/aws-lambda';

/** Powertools' log levels, by the level Lambda filters application logs at. */
const APPLICATION_LEVEL: Record<string, lambda.ApplicationLogLevel> = {
  TRACE: lambda.ApplicationLogLevel.TRACE,
  DEBUG: lambda.ApplicationLogLevel.DEBUG,
  INFO: lambda.ApplicationLogLevel.INFO,
  WARN: lambda.ApplicationLogLevel.WARN,
  ERROR: lambda.ApplicationLogLevel.ERROR,
  CRITICAL: lambda.ApplicationLogLevel.FATAL,
  SILENT: lambda.ApplicationLogLevel.FATAL,
};

/**
 * The logging properties of a function whose environment is `environment`: JSON format,
 * system logs at WARN, application logs at `POWERTOOLS_LOG_LEVEL` (default INFO). Throws on a
 * level Powertools does not know.
 *
 * @example
 * ```ts
 * new NodejsFunction(this, 'Fn', { ...functionLogging({ POWERTOOLS_LOG_LEVEL: 'DEBUG' }), entry });
 * // loggingFormat JSON, systemLogLevelV2 WARN, applicationLogLevelV2 DEBUG
 * ```
 */
export function functionLogging(
  environment: Record<string, string | undefined>,
): Required<Pick<lambda.FunctionOptions, 'loggingFormat' | 'systemLogLevelV2' | 'applicationLogLevelV2'>> {
  const level = (environment['POWERTOOLS_LOG_LEVEL'] ?? 'INFO').toUpperCase();
  const applicationLogLevelV2 = APPLICATION_LEVEL[level];
  if (!applicationLogLevelV2)
    throw new Error(
      `POWERTOOLS_LOG_LEVEL must be one of ${Object.keys(APPLICATION_LEVEL).join(', ')} (got ${environment['POWERTOOLS_LOG_LEVEL']})`,
    );
  return {
    loggingFormat: lambda.LoggingFormat.JSON,
    systemLogLevelV2: lambda.SystemLogLevel.WARN,
    applicationLogLevelV2,
  };
}

/**
 * `NODE_OPTIONS` for the functions: `--enable-source-maps` only when asked. Node then reads each
 * bundle's source map at start (a longer cold start) and maps every stack trace it formats (CPU
 * time per error): docs/BENCHMARKS.md, "Source maps", has the figures. The map ships in every
 * bundle either way, for mapping a stack trace offline.
 *
 * @example
 * ```ts
 * nodeOptions(true);  // { NODE_OPTIONS: '--enable-source-maps' }
 * nodeOptions(false); // {}
 * ```
 */
export function nodeOptions(sourceMaps: boolean | undefined): Record<string, string> {
  return sourceMaps ? { NODE_OPTIONS: '--enable-source-maps' } : {};
}
