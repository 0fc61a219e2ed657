/**
 * Finds the `nabla` binary: the `nabla.server.path` setting when it is set, otherwise `PATH`.
 *
 * Everything the lookup needs from the machine comes in through {@link ServerPathEnvironment},
 * so this module does not import `vscode` and the tests can pretend to be any platform.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

/** The name of the binary, as Cargo builds it from `crates/cli`. */
export const BINARY_NAME = "nabla";

/** How to get the binary, for messages. */
export const INSTALL_HINT =
  "Build it from a Nabla checkout with `cargo install --path crates/cli` (which puts `nabla` in ~/.cargo/bin)";

/** What the lookup may ask of the machine. */
export interface ServerPathEnvironment {
  readonly platform: NodeJS.Platform;
  /** Environment variables; only `PATH` (any case on Windows) is read. */
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly homeDir: string;
  /** The first workspace folder, against which a relative setting is resolved. */
  readonly workspaceFolder: string | undefined;
  /** True for an existing regular file that may be executed. */
  isExecutableFile(file: string): boolean;
}

export type ServerPathResolution =
  | {
      readonly kind: "found";
      readonly path: string;
      /** Where the path came from: the setting, or a search of `PATH`. */
      readonly source: "setting" | "PATH";
    }
  | {
      readonly kind: "missing";
      /** A complete sentence for the user that says what to do. */
      readonly message: string;
    };

/** The real machine, for the extension and the protocol test. */
export function nodeEnvironment(workspaceFolder: string | undefined): ServerPathEnvironment {
  return {
    platform: process.platform,
    env: process.env,
    homeDir: os.homedir(),
    workspaceFolder,
    isExecutableFile(file: string): boolean {
      try {
        if (!fs.statSync(file).isFile()) {
          return false;
        }
        if (process.platform !== "win32") {
          fs.accessSync(file, fs.constants.X_OK);
        }
        return true;
      } catch {
        return false;
      }
    },
  };
}

/**
 * Resolves the binary from the setting's value (`""` when unset).
 *
 * A setting that contains no path separator (`nabla-dev`) is a command name looked up on `PATH`;
 * anything else is a path, with `~` and `${workspaceFolder}` expanded and a relative path taken
 * from the workspace folder.
 */
export function resolveServerPath(
  configured: string,
  environment: ServerPathEnvironment,
): ServerPathResolution {
  const setting = configured.trim();
  if (setting === "") {
    const found = findOnPath(BINARY_NAME, environment);
    if (found !== undefined) {
      return { kind: "found", path: found, source: "PATH" };
    }
    return {
      kind: "missing",
      message:
        `Nabla: could not find \`${BINARY_NAME}\` on PATH, so the language server cannot start. ` +
        `${INSTALL_HINT}, or set \`nabla.server.path\` to the binary's full path.`,
    };
  }

  const pathApi = pathFor(environment.platform);
  if (!hasSeparator(setting, environment.platform)) {
    const found = findOnPath(setting, environment);
    if (found !== undefined) {
      return { kind: "found", path: found, source: "setting" };
    }
    return {
      kind: "missing",
      message:
        `Nabla: \`nabla.server.path\` is "${setting}", but no such command is on PATH. ` +
        `Set it to the binary's full path, or clear it to use \`${BINARY_NAME}\` from PATH.`,
    };
  }

  const expanded = expandSetting(setting, environment);
  const absolute =
    pathApi.isAbsolute(expanded) || environment.workspaceFolder === undefined
      ? expanded
      : pathApi.resolve(environment.workspaceFolder, expanded);
  if (environment.isExecutableFile(absolute)) {
    return { kind: "found", path: absolute, source: "setting" };
  }
  const shown = absolute === setting ? `"${setting}"` : `"${setting}" (${absolute})`;
  return {
    kind: "missing",
    message:
      `Nabla: \`nabla.server.path\` is ${shown}, but there is no executable file there. ` +
      `Fix the path, or clear the setting to use \`${BINARY_NAME}\` from PATH.`,
  };
}

/** The first executable `name` in the directories of `PATH`, or `undefined`. */
export function findOnPath(name: string, environment: ServerPathEnvironment): string | undefined {
  const pathApi = pathFor(environment.platform);
  const windows = environment.platform === "win32";
  const candidates = windows && pathApi.extname(name) === "" ? [`${name}.exe`, name] : [name];
  for (const directory of pathDirectories(environment)) {
    for (const candidate of candidates) {
      const file = pathApi.join(directory, candidate);
      if (environment.isExecutableFile(file)) {
        return file;
      }
    }
  }
  return undefined;
}

function pathDirectories(environment: ServerPathEnvironment): string[] {
  const value = envVar(environment, "PATH") ?? "";
  const delimiter = environment.platform === "win32" ? ";" : ":";
  // An empty entry means the current directory to a shell; the extension host's current directory
  // is meaningless to the user, so skip it rather than run whatever happens to be there.
  return value
    .split(delimiter)
    .map((entry) => (environment.platform === "win32" ? entry.replace(/^"(.*)"$/, "$1") : entry))
    .filter((entry) => entry !== "");
}

function envVar(environment: ServerPathEnvironment, name: string): string | undefined {
  if (environment.platform !== "win32") {
    return environment.env[name];
  }
  // Windows environment variables are case-insensitive (`Path` is common).
  const key = Object.keys(environment.env).find((k) => k.toUpperCase() === name);
  return key === undefined ? undefined : environment.env[key];
}

function expandSetting(setting: string, environment: ServerPathEnvironment): string {
  let expanded = setting;
  if (environment.workspaceFolder !== undefined) {
    expanded = expanded.split("${workspaceFolder}").join(environment.workspaceFolder);
  }
  if (expanded === "~") {
    return environment.homeDir;
  }
  if (expanded.startsWith("~/") || (environment.platform === "win32" && expanded.startsWith("~\\"))) {
    return pathFor(environment.platform).join(environment.homeDir, expanded.slice(2));
  }
  return expanded;
}

function hasSeparator(value: string, platform: NodeJS.Platform): boolean {
  return value.includes("/") || (platform === "win32" && value.includes("\\")) || value.startsWith("~");
}

function pathFor(platform: NodeJS.Platform): path.PlatformPath {
  return platform === "win32" ? path.win32 : path.posix;
}
