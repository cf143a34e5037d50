/**
 * The IAM denials seen in this test process, kept apart from the recorder so the setup file
 * that reports them (`../iam-setup.ts`, loaded before every test file) imports nothing heavy.
 */
const denials: string[] = [];

/** Keeps one denial for the running test. */
export function deny(description: string): void {
  denials.push(description);
}

/** The denials since the last call (the setup file fails the test with them). */
export function takeDenials(): string[] {
  return denials.splice(0, denials.length);
}
