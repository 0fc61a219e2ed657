/**
 * "Nabla: Show Computational Graph" and "Nabla: Show Picture": webview panels beside the editor
 * that show the SVG of the graph a run recorded (`nabla run --graph`) and the charts and images a
 * program wrote, and a code lens on each `plot`/`scatter`/`histogram`/`save_image` call with a
 * literal path that opens its picture.
 *
 * The extension runs `nabla` itself, as for Run File; the language server never runs a program.
 * What needs no VS Code (arguments, paths, HTML) is in `pictures.ts`.
 */
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import { COMMANDS } from "./commands";
import { savedOnDisk } from "./fileOnDisk";
import { graphArguments, graphOutputPath, makeNonce, pictureCalls, pictureHtml, pictureKind, resolvePicture } from "./pictures";
import type { ServerPathResolution } from "./serverPath";

/** What the panels need from the rest of the extension. */
export interface PictureHost {
  /** The `nabla` binary, from the current settings. */
  binary(): ServerPathResolution;
  /** Says that the binary is missing, with buttons to open the settings or retry. */
  reportMissingBinary(message: string, retry: () => Promise<void>): Promise<void>;
  /** The `.nb` file a command is for: its argument, else the active Nabla editor's file. */
  fileUri(resource: unknown): vscode.Uri | undefined;
}

const VIEW_TYPE = "nabla.picture";
const OUTPUT_NAME = "Nabla Graph";

/** Registers the two commands and the code lens; the returned disposables undo it. */
export function registerPictureViews(context: vscode.ExtensionContext, host: PictureHost): vscode.Disposable[] {
  const panels = new PicturePanels();
  const output = vscode.window.createOutputChannel(OUTPUT_NAME);
  // The workspace's storage folder, else the global one (a window without a folder).
  const storage = (): string => (context.storageUri ?? context.globalStorageUri).fsPath;
  return [
    panels,
    output,
    vscode.commands.registerCommand(COMMANDS.showGraph, (resource?: unknown) => showGraph(resource, host, storage(), output, panels)),
    vscode.commands.registerCommand(COMMANDS.showPicture, (picture?: unknown) => showPicture(picture, host, panels)),
    vscode.languages.registerCodeLensProvider({ language: "nabla" }, new PictureLenses()),
  ];
}

/** "Nabla: Show Computational Graph": runs the file with `--graph` and shows the SVG beside it. */
async function showGraph(
  resource: unknown,
  host: PictureHost,
  storage: string,
  output: vscode.OutputChannel,
  panels: PicturePanels,
): Promise<void> {
  const uri = host.fileUri(resource);
  if (uri === undefined) {
    void vscode.window.showErrorMessage("Nabla: open a .nb file to see its computational graph.");
    return;
  }
  if (!(await savedOnDisk(uri))) {
    return;
  }
  const binary = host.binary();
  if (binary.kind === "missing") {
    void host.reportMissingBinary(binary.message, () => showGraph(resource, host, storage, output, panels));
    return;
  }
  const file = uri.fsPath;
  const out = graphOutputPath(storage, file);
  await fs.promises.mkdir(path.dirname(out), { recursive: true });
  await fs.promises.rm(out, { force: true });
  const args = graphArguments(file, out);
  const cwd = vscode.workspace.getWorkspaceFolder(uri)?.uri.fsPath ?? path.dirname(file);
  output.clear();
  output.appendLine(`$ ${binary.path} ${args.join(" ")}`);
  const status = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Nabla: running ${path.basename(file)} to draw its graph`, cancellable: true },
    (_progress, token) => run(binary.path, args, cwd, output, token),
  );
  output.appendLine(`[${status}]`);
  if (status === "cancelled") {
    return;
  }
  if (status !== "exit 0" || !fs.existsSync(out)) {
    output.show(true);
    void vscode.window.showErrorMessage(`Nabla: \`nabla run --graph\` failed (${status}); its output is in the "${OUTPUT_NAME}" output.`);
    return;
  }
  panels.show(out, `Graph: ${path.basename(file)}`, `the computational graph of ${path.basename(file)} (nabla run --graph)`);
}

/** Runs the binary, its output (both streams) going to `output`; resolves to how it ended. */
function run(binary: string, args: string[], cwd: string, output: vscode.OutputChannel, token: vscode.CancellationToken): Promise<string> {
  return new Promise((resolve) => {
    const child = spawn(binary, args, { cwd, env: { ...process.env, NO_COLOR: "1" }, stdio: ["ignore", "pipe", "pipe"] });
    const cancel = token.onCancellationRequested(() => child.kill());
    child.stdout.on("data", (chunk: Buffer) => output.append(chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => output.append(chunk.toString()));
    child.on("error", (error) => {
      cancel.dispose();
      resolve(`cannot start ${binary}: ${error.message}`);
    });
    child.on("close", (code, signal) => {
      cancel.dispose();
      resolve(token.isCancellationRequested ? "cancelled" : signal !== null ? `killed by ${signal}` : `exit ${code}`);
    });
  });
}

/**
 * "Nabla: Show Picture": shows the picture a code lens names, or, from the palette, one of those
 * the active file writes (a list when it writes several).
 */
async function showPicture(picture: unknown, host: PictureHost, panels: PicturePanels): Promise<void> {
  if (typeof picture === "string" && picture !== "") {
    return showPictureFile(vscode.Uri.parse(picture, true), host, panels);
  }
  if (picture instanceof vscode.Uri) {
    return showPictureFile(picture, host, panels);
  }
  const source = host.fileUri(undefined);
  const document = vscode.workspace.textDocuments.find((doc) => doc.uri.toString() === source?.toString());
  if (source === undefined || document === undefined || source.scheme !== "file") {
    void vscode.window.showErrorMessage("Nabla: open a .nb file saved on disk to see the pictures it writes.");
    return;
  }
  const files = [...new Set(pictureCalls(document.getText()).map((call) => resolvePicture(source.fsPath, call.path)))];
  if (files.length === 0) {
    void vscode.window.showInformationMessage(
      "Nabla: this file writes no picture with a literal path (`plot`, `scatter`, `histogram` or `save_image` with a \".svg\" or \".png\" file).",
    );
    return;
  }
  const items = files.map((file) => ({
    label: path.relative(path.dirname(source.fsPath), file),
    description: fs.existsSync(file) ? undefined : "not written yet",
    file,
  }));
  const chosen = items.length === 1 ? items[0] : await vscode.window.showQuickPick(items, { placeHolder: "The picture to show" });
  if (chosen !== undefined) {
    await showPictureFile(vscode.Uri.file(chosen.file), host, panels, source);
  }
}

async function showPictureFile(picture: vscode.Uri, host: PictureHost, panels: PicturePanels, source?: vscode.Uri): Promise<void> {
  if (fs.existsSync(picture.fsPath)) {
    panels.show(picture.fsPath, path.basename(picture.fsPath), "written by the program");
    return;
  }
  const runFile = "Run File";
  const from = source ?? host.fileUri(undefined);
  const choice = await vscode.window.showErrorMessage(
    `Nabla: ${path.basename(picture.fsPath)} has not been written yet; run the program first.`,
    ...(from === undefined ? [] : [runFile]),
  );
  if (choice === runFile && from !== undefined) {
    await vscode.commands.executeCommand(COMMANDS.runFile, from);
  }
}

/** A "Show PATH" lens on each picture built-in call with a literal path. */
class PictureLenses implements vscode.CodeLensProvider {
  provideCodeLenses(document: vscode.TextDocument): vscode.CodeLens[] {
    if (document.uri.scheme !== "file") {
      return [];
    }
    return pictureCalls(document.getText()).map((call) => {
      const position = document.positionAt(call.start);
      const file = vscode.Uri.file(resolvePicture(document.uri.fsPath, call.path));
      return new vscode.CodeLens(new vscode.Range(position, position), {
        title: `$(file-media) Show ${call.path}`,
        command: COMMANDS.showPicture,
        arguments: [file.toString()],
        tooltip: `Open ${file.fsPath}, which this ${call.builtin} call writes, beside the editor`,
      });
    });
  }
}

/** One webview panel per picture file, redrawn when the file changes on disk. */
class PicturePanels implements vscode.Disposable {
  private readonly open = new Map<string, { panel: vscode.WebviewPanel; watcher: vscode.FileSystemWatcher; caption: string }>();

  show(file: string, title: string, caption: string): void {
    const existing = this.open.get(file);
    if (existing !== undefined) {
      existing.caption = caption;
      existing.panel.title = title;
      this.render(file);
      existing.panel.reveal(vscode.ViewColumn.Beside, true);
      return;
    }
    const folder = vscode.Uri.file(path.dirname(file));
    const panel = vscode.window.createWebviewPanel(
      VIEW_TYPE,
      title,
      { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
      { enableScripts: false, localResourceRoots: [folder] },
    );
    const watcher = vscode.workspace.createFileSystemWatcher(new vscode.RelativePattern(folder, path.basename(file)));
    const redraw = (): void => this.render(file);
    watcher.onDidChange(redraw);
    watcher.onDidCreate(redraw);
    this.open.set(file, { panel, watcher, caption });
    panel.onDidDispose(() => {
      watcher.dispose();
      this.open.delete(file);
    });
    this.render(file);
  }

  private render(file: string): void {
    const entry = this.open.get(file);
    if (entry === undefined) {
      return;
    }
    const { webview } = entry.panel;
    const modified = fs.statSync(file, { throwIfNoEntry: false })?.mtime;
    // The modification time in the query makes the webview load the new file, not its cached copy.
    const imageUri = webview.asWebviewUri(vscode.Uri.file(file)).with({ query: `v=${modified?.getTime() ?? 0}` });
    webview.html = pictureHtml({
      title: entry.panel.title,
      kind: pictureKind(file) ?? "svg",
      caption: modified === undefined ? `${entry.caption} · not there any more` : `${entry.caption} · ${modified.toLocaleString()}`,
      imageUri: imageUri.toString(),
      cspSource: webview.cspSource,
      nonce: makeNonce(),
    });
  }

  dispose(): void {
    for (const { panel } of [...this.open.values()]) {
      panel.dispose();
    }
  }
}
