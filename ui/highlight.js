// Syntax colouring for the diff, line by line, for the languages Strata's users keep: MATLAB (.m),
// Python, Rust, JSON, YAML, TOML, Markdown. A tokenizer per language (comments, strings, numbers,
// keywords), not a parser: a line is coloured on its own, so a string or comment spanning lines is
// coloured on its first line only. Everything is built as DOM text nodes, never as HTML.

const KEYWORDS = {
  m: 'function end if elseif else for while switch case otherwise try catch return break continue global persistent classdef properties methods events parfor',
  py: 'def class return if elif else for while try except finally with as import from pass break continue lambda yield raise in is not and or None True False async await global nonlocal assert del',
  rs: 'fn let mut pub struct enum impl trait use mod crate self Self super match if else for while loop return break continue as in ref move where type const static unsafe async await dyn true false Some None Ok Err',
  json: 'true false null',
  yaml: 'true false null yes no on off',
  toml: 'true false',
  md: '',
};
const COMMENT = { m: /^%.*/, py: /^#.*/, rs: /^\/\/.*/, yaml: /^#.*/, toml: /^#.*/ };
const STRING = { m: /^'(?:[^']|'')*'?|^"(?:[^"\\]|\\.)*"?/, default: /^"(?:[^"\\]|\\.)*"?|^'(?:[^'\\]|\\.)*'?/ };
const NUMBER = /^(?:0x[0-9a-fA-F_]+|\d[\d_]*(?:\.\d+)?(?:[eE][+-]?\d+)?)/;
const WORD = /^[A-Za-z_][A-Za-z0-9_]*/;

export function languageOf(path) {
  const ext = /\.([A-Za-z0-9]+)$/.exec(path)?.[1]?.toLowerCase();
  if (ext === 'yml') return 'yaml';
  return ext !== undefined && ext in KEYWORDS ? ext : null;
}

const keywordSets = new Map(Object.entries(KEYWORDS).map(([lang, words]) => [lang, new Set(words.split(' ').filter(Boolean))]));

/** Appends `line` to `parent` as text nodes and coloured spans. */
export function renderLine(parent, line, lang) {
  if (lang === null) {
    parent.append(line);
    return;
  }
  if (lang === 'md') {
    const heading = /^#{1,6}\s/.test(line);
    parent.append(span(heading ? 'tok-kw' : null, line));
    return;
  }
  const keywords = keywordSets.get(lang);
  let rest = line;
  let plain = '';
  const flush = () => {
    if (plain !== '') parent.append(plain);
    plain = '';
  };
  while (rest !== '') {
    const comment = COMMENT[lang]?.exec(rest);
    if (comment) {
      flush();
      parent.append(span('tok-comment', comment[0]));
      return;
    }
    const string = (STRING[lang] ?? STRING.default).exec(rest);
    // A MATLAB quote after a name or bracket is the transpose operator, not a string.
    if (string && !(lang === 'm' && rest[0] === "'" && /[\w)\]}.']$/.test(plain))) {
      flush();
      parent.append(span(lang === 'json' && /^\s*:/.test(rest.slice(string[0].length)) ? 'tok-key' : 'tok-string', string[0]));
      rest = rest.slice(string[0].length);
      continue;
    }
    const number = NUMBER.exec(rest);
    if (number && !/[\w]$/.test(plain)) {
      flush();
      parent.append(span('tok-number', number[0]));
      rest = rest.slice(number[0].length);
      continue;
    }
    const word = WORD.exec(rest);
    if (word) {
      if (keywords.has(word[0])) {
        flush();
        parent.append(span('tok-kw', word[0]));
      } else {
        plain += word[0];
      }
      rest = rest.slice(word[0].length);
      continue;
    }
    plain += rest[0];
    rest = rest.slice(1);
  }
  flush();
}

function span(className, text) {
  const element = document.createElement('span');
  if (className !== null) element.className = className;
  element.textContent = text;
  return element;
}
