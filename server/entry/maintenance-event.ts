/**
 * What the EventBridge schedules send the maintenance function. The CDK stack and the entry
 * share it, so the lag schedule's event is the one the entry dispatches on.
 *
 * @example
 * ```ts
 * isLagTask(LAG_TASK_EVENT); // true: report consumer lag only
 * isLagTask({});             // false: a full maintenance pass (then lag)
 * ```
 */
export const LAG_TASK_EVENT = { task: 'lag' } as const;

/** A scheduled maintenance event: `{}` (EventBridge's default input) for a full pass, or {@link LAG_TASK_EVENT}. */
export type MaintenanceEvent = { task?: string } | null | undefined;

export const isLagTask = (event: MaintenanceEvent): boolean => event?.task === LAG_TASK_EVENT.task;
