/**
 * What "Nabla: Show Computational Graph" and "Nabla: Show Picture" need that VS Code does not:
 * the arguments of the run that draws the graph, where its SVG goes, the pictures a program writes
 * (the literal paths of its `plot`, `scatter`, `histogram` and `save_image` calls), and the HTML
 * of the webview that shows a picture, under a Content-Security-Policy that allows nothing but
 * that image.
 *
 * Pure: no `vscode` import, so it is tested on Node alone (`pictureViews.ts` holds the panels).
 */
import { createHash, randomBytes } from "node:crypto";
import * as path from "node:path";

/** The built-ins that write a picture; their first argument is the file's path. */
export const PICTURE_BUILTINS = ["plot", "scatter", "histogram", "save_image"] as const;

export type PictureBuiltin = (typeof PICTURE_BUILTINS)[number];

/**
 * The arguments of the binary that run `file` and write the picture of the graph its last
 * `backward` differentiated to `out` (`nabla run --graph OUT FILE`, as docs/cli.md gives it).
 */
export function graphArguments(file: string, out: string): string[] {
  return ["run", "--graph", out, file];
}

/**
 * Where the graph of `file` is written: `<dir>/graphs/<name>-<hash>.graph.svg`, under the
 * extension's storage folder `dir` (never beside the source, which would litter the workspace),
 * with a hash of the whole path so that two `main.nb` of different folders do not share one.
 */
export function graphOutputPath(dir: string, file: string): string {
  const hash = createHash("sha256").update(path.resolve(file)).digest("hex").slice(0, 10);
  const name = path.basename(file).replace(/\.nb$/, "");
  return path.join(dir, "graphs", `${name}-${hash}.graph.svg`);
}

/** A call of a picture built-in whose path is a string literal. */
export interface PictureCall {
  readonly builtin: PictureBuiltin;
  /** The path as the program spells it, escapes decoded (relative to the source file). */
  readonly path: string;
  /** The offset of the built-in's name (where the code lens goes). */
  readonly start: number;
  /** The offsets of the string literal, quotes included. */
  readonly literalStart: number;
  readonly literalEnd: number;
}

/** The escapes Nabla's strings accept (docs/reference/syntax.md). */
const ESCAPES: Record<string, string> = { n: "\n", t: "\t", r: "\r", "0": "\0", "\\": "\\", "'": "'", '"': '"' };

/**
 * The calls of `plot`, `scatter`, `histogram` and `save_image` in a Nabla source text whose first
 * argument is a string literal ending in `.svg` or `.png`, in order. Comments, strings and
 * character literals are skipped, so a commented-out call or a call inside a string is not one;
 * a name that only ends in a built-in's name (`myplot(`) is not either.
 */
export function pictureCalls(text: string): PictureCall[] {
  const calls: PictureCall[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === "/" && text[i + 1] === "/") {
      const end = text.indexOf("\n", i);
      i = end < 0 ? text.length : end + 1;
    } else if (c === "/" && text[i + 1] === "*") {
      const end = text.indexOf("*/", i + 2);
      i = end < 0 ? text.length : end + 2;
    } else if (c === '"' || c === "'") {
      i = quoted(text, i).end;
    } else if (isIdentStart(c)) {
      let end = i + 1;
      while (end < text.length && isIdentPart(text[end])) {
        end++;
      }
      const name = text.slice(i, end);
      if ((PICTURE_BUILTINS as readonly string[]).includes(name)) {
        const call = literalArgument(text, end);
        if (call !== undefined && pictureKind(call.value) !== undefined) {
          calls.push({
            builtin: name as PictureBuiltin,
            path: call.value,
            start: i,
            literalStart: call.start,
            literalEnd: call.end,
          });
        }
      }
      i = end;
    } else {
      i++;
    }
  }
  return calls;
}

function isIdentStart(c: string): boolean {
  return /[A-Za-z_]/.test(c);
}

function isIdentPart(c: string): boolean {
  return /[A-Za-z0-9_]/.test(c);
}

/** The string literal opening at `start` (a quote): its decoded value and where it ends. */
function quoted(text: string, start: number): { value: string; end: number } {
  const quote = text[start];
  let value = "";
  let i = start + 1;
  while (i < text.length && text[i] !== quote && text[i] !== "\n") {
    if (text[i] === "\\" && i + 1 < text.length) {
      value += ESCAPES[text[i + 1]] ?? text[i + 1];
      i += 2;
    } else {
      value += text[i];
      i++;
    }
  }
  return { value, end: Math.min(i + 1, text.length) };
}

/** After a built-in's name at `from`: `(`, then a string literal as the first argument. */
function literalArgument(text: string, from: number): { value: string; start: number; end: number } | undefined {
  let i = skipSpace(text, from);
  if (text[i] !== "(") {
    return undefined;
  }
  i = skipSpace(text, i + 1);
  if (text[i] !== '"') {
    return undefined;
  }
  const literal = quoted(text, i);
  if (text[literal.end - 1] !== '"' || literal.end === i + 1) {
    return undefined;
  }
  return { value: literal.value, start: i, end: literal.end };
}

function skipSpace(text: string, from: number): number {
  let i = from;
  while (i < text.length && /\s/.test(text[i])) {
    i++;
  }
  return i;
}

/** `"svg"` or `"png"` by the file's extension (as `nabla` decides the format), else `undefined`. */
export function pictureKind(file: string): "svg" | "png" | undefined {
  const ext = path.extname(file).toLowerCase();
  return ext === ".svg" ? "svg" : ext === ".png" ? "png" : undefined;
}

/** The file a picture path of `source` names: relative paths are taken from the source's folder. */
export function resolvePicture(source: string, picture: string): string {
  return path.resolve(path.dirname(source), picture);
}

/** A fresh nonce for the webview's style element. */
export function makeNonce(): string {
  return randomBytes(16).toString("base64").replace(/[^A-Za-z0-9]/g, "");
}

/** `text` safe inside HTML text and double-quoted attributes. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] ?? c);
}

/** What the webview shows. */
export interface PicturePage {
  /** The heading (the panel's title). */
  readonly title: string;
  readonly kind: "svg" | "png";
  /** A line under the heading (what wrote the picture, and when). */
  readonly caption: string;
  /** The image's URI as the webview may load it (`Webview.asWebviewUri`). */
  readonly imageUri: string;
  /** `Webview.cspSource`: the origin of the extension's local resources. */
  readonly cspSource: string;
  readonly nonce: string;
}

/**
 * The Content-Security-Policy of the picture page: nothing may load or run but images from the
 * webview's own resource origin and the one style element that carries the nonce. No script at
 * all (the panel is created without scripts too); an SVG shown by `<img>` runs none of its own.
 */
export function pictureCsp(cspSource: string, nonce: string): string {
  return [`default-src 'none'`, `img-src ${cspSource}`, `style-src 'nonce-${nonce}'`].join("; ");
}

/** The HTML of the webview that shows one picture, scrollable at its own size. */
export function pictureHtml(page: PicturePage): string {
  const title = escapeHtml(page.title);
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${escapeHtml(pictureCsp(page.cspSource, page.nonce))}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>${title}</title>
<style nonce="${escapeHtml(page.nonce)}">
  body { margin: 0; padding: 8px 12px; }
  header { font-family: var(--vscode-font-family); color: var(--vscode-descriptionForeground); margin-bottom: 8px; }
  header strong { color: var(--vscode-foreground); }
  .picture { overflow: auto; }
  .picture img { display: block; max-width: none; background: white; image-rendering: auto; }
  .picture img.png { image-rendering: pixelated; min-width: 256px; }
</style>
</head>
<body>
<header><strong>${title}</strong> · ${escapeHtml(page.caption)}</header>
<div class="picture"><img class="${page.kind}" src="${escapeHtml(page.imageUri)}" alt="${title}"></div>
</body>
</html>
`;
}
