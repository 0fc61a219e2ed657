/**
 * The one precondition of every command that runs `nabla` on a file (Run File, Run Test, Show
 * Computational Graph): the file's unsaved edits are saved, and it is a file on disk.
 */
import * as vscode from "vscode";

/** Saves `uri`'s document if it has unsaved edits; says why and gives false when it cannot run. */
export async function savedOnDisk(uri: vscode.Uri): Promise<boolean> {
  const document = vscode.workspace.textDocuments.find((doc) => doc.uri.toString() === uri.toString());
  if (document?.isDirty === true && !(await document.save())) {
    void vscode.window.showErrorMessage("Nabla: save the file before running it.");
    return false;
  }
  if (uri.scheme !== "file") {
    void vscode.window.showErrorMessage("Nabla: only files saved on disk can be run; save this one first.");
    return false;
  }
  return true;
}
