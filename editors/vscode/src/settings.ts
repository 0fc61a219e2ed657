/**
 * The extension's settings (`nabla.*`), read through a plain getter so that this module does not
 * import `vscode` and can be tested on Node alone.
 */

/** The settings section; every key below lives under it. */
export const SETTINGS_SECTION = "nabla";

/** Setting keys relative to {@link SETTINGS_SECTION}. */
export const SETTING_KEYS = {
  serverPath: "server.path",
  serverExtraArgs: "server.extraArgs",
  codeLensEnable: "codeLens.enable",
  /** Read by `vscode-languageclient` itself (`<client id>.trace.server`). */
  traceServer: "trace.server",
} as const;

/** What the extension reads; `nabla.trace.server` is left to the language client. */
export interface NablaSettings {
  /** `nabla.server.path`: the `nabla` binary; empty means "look it up on PATH". */
  readonly serverPath: string;
  /** `nabla.server.extraArgs`: passed to the server after `nabla lsp`. */
  readonly serverExtraArgs: readonly string[];
  /** `nabla.codeLens.enable`: ask the server for "Run test" code lenses. */
  readonly codeLensEnable: boolean;
}

/** The defaults, which must equal those declared in `package.json` (a unit test checks it). */
export const DEFAULT_SETTINGS: NablaSettings = {
  serverPath: "",
  serverExtraArgs: [],
  codeLensEnable: true,
};

/** Settings whose change takes effect only when the server restarts. */
export const RESTART_SETTINGS: readonly string[] = [
  SETTING_KEYS.serverPath,
  SETTING_KEYS.serverExtraArgs,
  SETTING_KEYS.codeLensEnable,
].map((key) => `${SETTINGS_SECTION}.${key}`);

/**
 * Reads the settings through `get` (a key relative to the `nabla` section to its raw value).
 * Values of the wrong type fall back to the default, as VS Code itself would show them as
 * invalid in the settings editor but still hand them to us.
 */
export function readSettings(get: (key: string) => unknown): NablaSettings {
  const serverPath = get(SETTING_KEYS.serverPath);
  const extraArgs = get(SETTING_KEYS.serverExtraArgs);
  const codeLens = get(SETTING_KEYS.codeLensEnable);
  return {
    serverPath: typeof serverPath === "string" ? serverPath.trim() : DEFAULT_SETTINGS.serverPath,
    serverExtraArgs:
      Array.isArray(extraArgs) && extraArgs.every((arg) => typeof arg === "string")
        ? [...extraArgs]
        : DEFAULT_SETTINGS.serverExtraArgs,
    codeLensEnable: typeof codeLens === "boolean" ? codeLens : DEFAULT_SETTINGS.codeLensEnable,
  };
}
