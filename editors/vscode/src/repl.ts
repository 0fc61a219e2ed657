/**
 * What "Nabla: Start REPL" and "Nabla: Send Selection to REPL" need that VS Code does not: the
 * REPL's arguments and the text sent for a selection or a line.
 *
 * Pure: no `vscode` import, so it is tested on Node alone.
 */

/** The name of the REPL's terminal. */
export const REPL_TERMINAL_NAME = "Nabla REPL";

/** The arguments of the binary: `nabla repl`. */
export function replArguments(): string[] {
  return ["repl"];
}

/** Starts and ends a bracketed paste: a terminal program reads what is between as one paste. */
const PASTE_START = "\u001b[200~";
const PASTE_END = "\u001b[201~";

/**
 * The text to type into the REPL for the selected text, or for the line the cursor is on when
 * nothing is selected; `undefined` when that is blank. Several lines go as one bracketed paste,
 * so that the REPL takes them as one entry, as if they had been pasted; the caller then presses
 * Enter (`sendText(text, true)`).
 */
export function replInput(selected: string, currentLine: string): string | undefined {
  const source = selected.trim() === "" ? currentLine : selected;
  const text = source.replace(/\r\n?/g, "\n").replace(/\s+$/, "");
  if (text.trim() === "") {
    return undefined;
  }
  return text.includes("\n") ? `${PASTE_START}${text}${PASTE_END}` : text;
}
