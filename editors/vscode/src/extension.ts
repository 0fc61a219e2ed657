/**
 * The Nabla extension: starts the language server (`nabla lsp`) through `vscode-languageclient`,
 * runs files and tests in a terminal, runs `nabla repl` in a terminal of its own that
 * selections can be sent to, and shows the computational graph and the pictures a program wrote
 * in webviews (`pictureViews.ts`).
 *
 * Highlighting, the language configuration and snippets are declarative (see `package.json`);
 * everything that needs thought without VS Code lives in the pure modules beside this one.
 */
import * as path from "node:path";
import * as vscode from "vscode";
import { LanguageClient, type LanguageClientOptions, RevealOutputChannelOn, type ServerOptions } from "vscode-languageclient/node";
import { COMMANDS } from "./commands";
import { commandLine, runFileArguments, runTestsArguments, shellKind } from "./commandLine";
import { savedOnDisk } from "./fileOnDisk";
import { initializationOptions, serverArguments } from "./launch";
import { registerPictureViews } from "./pictureViews";
import { REPL_TERMINAL_NAME, replArguments, replInput } from "./repl";
import { nodeEnvironment, resolveServerPath, type ServerPathResolution } from "./serverPath";
import { RESTART_SETTINGS, SETTINGS_SECTION, readSettings, type NablaSettings } from "./settings";

const LANGUAGE_ID = "nabla";
const CLIENT_ID = "nabla";
const CLIENT_NAME = "Nabla Language Server";
const TERMINAL_NAME = "Nabla";

let server: NablaServer | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel(CLIENT_NAME);
  server = new NablaServer(output);
  const runner = new TerminalRunner();
  const repl = new ReplTerminal();
  const activeServer = server;
  context.subscriptions.push(
    output,
    runner,
    repl,
    vscode.commands.registerCommand(COMMANDS.startRepl, () => repl.show()),
    vscode.commands.registerCommand(COMMANDS.sendToRepl, () => repl.sendSelection()),
    vscode.commands.registerCommand(COMMANDS.restartServer, () => activeServer.restart()),
    vscode.commands.registerCommand(COMMANDS.showServerLog, () => output.show(true)),
    vscode.commands.registerCommand(COMMANDS.runFile, (resource?: unknown) =>
      runner.run(resource, (file) => runFileArguments(file)),
    ),
    vscode.commands.registerCommand(COMMANDS.runTests, (resource?: unknown) =>
      runner.run(resource, (file) => runTestsArguments(file)),
    ),
    vscode.commands.registerCommand(COMMANDS.runTest, (resource?: unknown, testName?: unknown) => {
      if (typeof testName !== "string") {
        void vscode.window.showErrorMessage("Nabla: Run Test needs the name of a test; use the code lens above a test block.");
        return;
      }
      return runner.run(resource, (file) => runTestsArguments(file, testName));
    }),
    ...registerPictureViews(context, {
      binary: () => resolveBinary(currentSettings()),
      reportMissingBinary,
      fileUri: resourceUri,
    }),
    // The settings are read each time the server starts (never kept from activation), and a
    // change of those the server is started with restarts it.
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (RESTART_SETTINGS.some((key) => event.affectsConfiguration(key))) {
        void activeServer.restart();
      }
    }),
    // Trusting the workspace makes its own `nabla.server.*` values count (they are restricted).
    vscode.workspace.onDidGrantWorkspaceTrust(() => activeServer.restart()),
  );
  await server.start();
}

export async function deactivate(): Promise<void> {
  await server?.stop();
  server = undefined;
}

function currentSettings(): NablaSettings {
  const configuration = vscode.workspace.getConfiguration(SETTINGS_SECTION);
  return readSettings((key) => configuration.get(key));
}

function firstWorkspaceFolder(): string | undefined {
  return vscode.workspace.workspaceFolders?.find((folder) => folder.uri.scheme === "file")?.uri.fsPath;
}

function resolveBinary(settings: NablaSettings): ServerPathResolution {
  return resolveServerPath(settings.serverPath, nodeEnvironment(firstWorkspaceFolder()));
}

/** Tells the user that the binary is missing and how to fix it, with buttons that do it. */
async function reportMissingBinary(message: string, retry: () => Promise<void>): Promise<void> {
  const openSettings = "Open Settings";
  const retryLabel = "Retry";
  const choice = await vscode.window.showErrorMessage(message, openSettings, retryLabel);
  if (choice === openSettings) {
    await vscode.commands.executeCommand("workbench.action.openSettings", `${SETTINGS_SECTION}.server.path`);
  } else if (choice === retryLabel) {
    await retry();
  }
}

/** The language client, started from the current settings and restarted when they change. */
class NablaServer {
  private client: LanguageClient | undefined;
  private watcher: vscode.FileSystemWatcher | undefined;
  /** Serialises start, stop and restart, which commands and setting changes can interleave. */
  private pending: Promise<void> = Promise.resolve();

  constructor(private readonly output: vscode.OutputChannel) {}

  start(): Promise<void> {
    return this.enqueue(() => this.startNow());
  }

  stop(): Promise<void> {
    return this.enqueue(() => this.stopNow());
  }

  restart(): Promise<void> {
    return this.enqueue(async () => {
      await this.stopNow();
      await this.startNow();
    });
  }

  private enqueue(step: () => Promise<void>): Promise<void> {
    this.pending = this.pending.then(step, step);
    return this.pending;
  }

  private async startNow(): Promise<void> {
    const settings = currentSettings();
    const binary = resolveBinary(settings);
    if (binary.kind === "missing") {
      this.output.appendLine(binary.message);
      void reportMissingBinary(binary.message, () => this.restart());
      return;
    }
    const args = serverArguments(settings);
    this.output.appendLine(`Starting ${binary.path} ${args.join(" ")} (from ${binary.source === "PATH" ? "PATH" : "nabla.server.path"})`);

    const serverOptions: ServerOptions = { command: binary.path, args };
    this.watcher = vscode.workspace.createFileSystemWatcher("**/*.nb");
    const clientOptions: LanguageClientOptions = {
      documentSelector: [
        { scheme: "file", language: LANGUAGE_ID },
        { scheme: "untitled", language: LANGUAGE_ID },
      ],
      initializationOptions: initializationOptions(settings),
      // Imported files may change on disk without being open.
      synchronize: { fileEvents: this.watcher },
      outputChannel: this.output,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
    };
    const client = new LanguageClient(CLIENT_ID, CLIENT_NAME, serverOptions, clientOptions);
    this.client = client;
    try {
      await client.start();
    } catch (error) {
      // The client has already said so in a notification with a link to this log.
      this.output.appendLine(`The language server failed to start: ${String(error)}`);
    }
  }

  private async stopNow(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.watcher?.dispose();
    this.watcher = undefined;
    if (client === undefined) {
      return;
    }
    try {
      await client.stop();
    } catch (error) {
      this.output.appendLine(`Stopping the language server failed: ${String(error)}`);
    }
  }
}

/** A terminal the extension made, forgotten once the user closes it. */
class OwnedTerminal implements vscode.Disposable {
  protected terminal: vscode.Terminal | undefined;
  private readonly closeListener = vscode.window.onDidCloseTerminal((closed) => {
    if (closed === this.terminal) {
      this.terminal = undefined;
    }
  });

  dispose(): void {
    this.closeListener.dispose();
  }
}

/** Runs `nabla ...` for a file in one reusable terminal. */
class TerminalRunner extends OwnedTerminal {
  /**
   * Runs the binary with `argumentsFor(file)`. `resource` is what VS Code passed to the command: a
   * `Uri` from a menu, a URI string from a code lens, or nothing from the command palette, where
   * the active editor's file is meant.
   */
  async run(resource: unknown, argumentsFor: (file: string) => string[]): Promise<void> {
    const uri = resourceUri(resource);
    if (uri === undefined) {
      void vscode.window.showErrorMessage("Nabla: open a .nb file to run it.");
      return;
    }
    if (!(await savedOnDisk(uri))) {
      return;
    }

    const binary = resolveBinary(currentSettings());
    if (binary.kind === "missing") {
      void reportMissingBinary(binary.message, () => this.run(resource, argumentsFor));
      return;
    }
    const shell = shellKind(vscode.env.shell, process.platform);
    const line = commandLine(binary.path, argumentsFor(uri.fsPath), shell);
    const terminal = this.terminalFor(uri);
    terminal.show(true);
    terminal.sendText(line, true);
  }

  private terminalFor(uri: vscode.Uri): vscode.Terminal {
    if (this.terminal === undefined) {
      const folder = vscode.workspace.getWorkspaceFolder(uri);
      this.terminal = vscode.window.createTerminal({
        name: TERMINAL_NAME,
        cwd: folder?.uri.fsPath ?? path.dirname(uri.fsPath),
      });
    }
    return this.terminal;
  }
}

/** `nabla repl` in a terminal of its own, started on demand and restarted once it has exited. */
class ReplTerminal extends OwnedTerminal {
  /** "Nabla: Start REPL": shows the REPL's terminal, starting the REPL if none runs. */
  show(): void {
    this.running()?.show(false);
  }

  /**
   * "Nabla: Send Selection to REPL": types the selection, or the current line when nothing is
   * selected (and then moves the cursor to the next line, so that repeating the command steps
   * through a file), into the REPL, starting it first when none runs.
   */
  sendSelection(): void {
    const editor = vscode.window.activeTextEditor;
    if (editor === undefined) {
      void vscode.window.showErrorMessage("Nabla: open a .nb file and select the code to send to the REPL.");
      return;
    }
    const { document, selection } = editor;
    const text = replInput(document.getText(selection), document.lineAt(selection.active.line).text);
    if (text === undefined) {
      return;
    }
    const terminal = this.running();
    if (terminal === undefined) {
      return;
    }
    terminal.show(true);
    terminal.sendText(text, true);
    if (selection.isEmpty && selection.active.line + 1 < document.lineCount) {
      const next = new vscode.Position(selection.active.line + 1, 0);
      editor.selection = new vscode.Selection(next, next);
      editor.revealRange(new vscode.Range(next, next));
    }
  }

  /**
   * The REPL's terminal: the one started earlier if its process still runs, else a new one that
   * runs the binary directly (no shell, so nothing needs quoting and what is sent reaches the REPL
   * even before it has started). `undefined`, after saying so, when the binary is missing.
   */
  private running(): vscode.Terminal | undefined {
    if (this.terminal !== undefined && this.terminal.exitStatus === undefined) {
      return this.terminal;
    }
    const binary = resolveBinary(currentSettings());
    if (binary.kind === "missing") {
      void reportMissingBinary(binary.message, () => Promise.resolve(this.show()));
      return undefined;
    }
    const active = vscode.window.activeTextEditor?.document.uri;
    const folder = active === undefined ? undefined : vscode.workspace.getWorkspaceFolder(active);
    const cwd =
      folder?.uri.fsPath ??
      (active?.scheme === "file" ? path.dirname(active.fsPath) : firstWorkspaceFolder());
    this.terminal?.dispose();
    this.terminal = vscode.window.createTerminal({
      name: REPL_TERMINAL_NAME,
      shellPath: binary.path,
      shellArgs: replArguments(),
      cwd,
    });
    return this.terminal;
  }
}

function resourceUri(resource: unknown): vscode.Uri | undefined {
  if (resource instanceof vscode.Uri) {
    return resource;
  }
  if (typeof resource === "string" && resource !== "") {
    return vscode.Uri.parse(resource, true);
  }
  const active = vscode.window.activeTextEditor?.document;
  return active?.languageId === LANGUAGE_ID ? active.uri : undefined;
}
