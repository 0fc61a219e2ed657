/**
 * How the extension launches the language server: the command-line arguments and the
 * `initializationOptions` of the `initialize` request.
 *
 * The extension and the protocol test (`test/protocol`) both build their launch from this module,
 * so the test talks to `nabla lsp` exactly as VS Code does.
 */
import { COMMANDS } from "./commands";
import type { NablaSettings } from "./settings";

/** The `initializationOptions` the extension sends; the server reads them once, at start-up. */
export interface NablaInitializationOptions {
  /**
   * The "Run test" code lens on each `test "name" { ... }` block. When `enable` is true the server
   * attaches `command` to the lens, with the arguments `[uri: string, testName: string]`.
   * When it is false (or the options are absent, as with other editors) the server offers none.
   */
  readonly testCodeLens: {
    readonly enable: boolean;
    readonly command: string;
  };
}

/** The server's subcommand. */
export const SERVER_SUBCOMMAND = "lsp";

/** The arguments after the binary: `lsp`, then the user's `nabla.server.extraArgs`. */
export function serverArguments(settings: NablaSettings): string[] {
  return [SERVER_SUBCOMMAND, ...settings.serverExtraArgs];
}

/** The `initializationOptions` for `settings`. */
export function initializationOptions(settings: NablaSettings): NablaInitializationOptions {
  return {
    testCodeLens: {
      enable: settings.codeLensEnable,
      command: COMMANDS.runTest,
    },
  };
}
