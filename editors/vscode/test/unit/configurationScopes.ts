/**
 * Which settings VS Code hands an extension from which settings file, by the `scope` a setting
 * declares in `package.json`: the rule the unit tests hold the manifest and the extension to.
 *
 * In a remote window (code-server in a browser, Remote-SSH, a dev container) the extension runs
 * on the remote machine, and the User settings are read with only the scopes that are not tied to
 * a machine (`LOCAL_MACHINE_SCOPES` in VS Code's
 * `src/vs/workbench/services/configuration/common/configuration.ts`): a `machine` or
 * `machine-overridable` setting written there is dropped, as if it were not written at all, and
 * counts only in the remote machine's own settings. A local window reads every scope from the
 * User settings.
 */

/** The scope a setting has when `package.json` declares none. */
export const DEFAULT_SCOPE = "window";

/** The scopes a remote window reads from the User settings file. */
export const USER_SCOPES_IN_REMOTE_WINDOW: readonly string[] = [
  "application",
  "window",
  "resource",
  "language-overridable",
];

/** Whether a setting of `scope` written in the User settings reaches an extension in a remote window. */
export function userSettingReachesRemoteWindow(scope: string | undefined): boolean {
  return USER_SCOPES_IN_REMOTE_WINDOW.includes(scope ?? DEFAULT_SCOPE);
}
