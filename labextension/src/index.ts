/**
 * pm-notebook: `%%pmsql` cells read as Druid SQL in JupyterLab 4 and Notebook 7.
 *
 * One CodeMirror extension, added to every editor through JupyterLab's editor extension registry: while the
 * first line of the editor's text is `%%pmsql` (with any options), the editor's language is Druid SQL
 * (keywords, and the functions of the sandbox's function table, generated into druid-functions.json at
 * build time); otherwise the extension adds nothing and the cell stays Python. It is decided again on every
 * change, so typing or deleting the magic line switches the highlighting at once. The magic line itself is
 * left out of the SQL parse (an option such as `--polars` is not a SQL comment) and shown as a magic.
 *
 * Completion is the kernel's (JupyterLab's completer, Tab): the extension adds no completion of its own.
 */
import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import {
  EditorExtensionRegistry,
  IEditorExtensionRegistry
} from '@jupyterlab/codemirror';
import { SQLDialect } from '@codemirror/lang-sql';
import {
  HighlightStyle,
  Language,
  languageDataProp,
  syntaxHighlighting
} from '@codemirror/language';
import {
  Compartment,
  EditorState,
  Extension,
  Prec,
  Text
} from '@codemirror/state';
import { Decoration, EditorView, ViewPlugin } from '@codemirror/view';
import { Input, NodeType, Parser, PartialParse, Tree } from '@lezer/common';
import { classHighlighter, tags } from '@lezer/highlight';

import druid from './druid-functions.json';
import { SQL_KEYWORDS, SQL_TYPES } from './sql-words';

/** The magic line that makes a cell SQL: `%%pmsql` alone or followed by options. */
const MAGIC = /^%%pmsql(\s|$)/;

/** Druid's words that are not in standard SQL's keyword list. */
const DRUID_KEYWORDS =
  'explain plan for clustered partitioned replace overwrite extern unnest pivot unpivot ' +
  'ignore respect nulls first last over window range rows preceding following current unbounded ' +
  'filter within lateral tablesample fetch offset';

/** Function names that are join keywords too: `LEFT JOIN` is far more common than `LEFT(s, n)`. */
const JOIN_WORDS = new Set(['left', 'right']);

const FUNCTIONS = (druid.functions as string[])
  .map(name => name.toLowerCase())
  .filter(name => !JOIN_WORDS.has(name));

/**
 * Druid SQL as lang-sql's dialect: standard keywords and types, Druid's functions as builtins. lang-sql
 * starts no identifier with `_`, so Druid's `__time` (and any `_name`) is read as a special name, like the
 * `:name` and `?` parameters pm_notebook binds.
 */
const dialect = SQLDialect.define({
  keywords: `${SQL_KEYWORDS} ${DRUID_KEYWORDS}`,
  types: SQL_TYPES,
  builtin: FUNCTIONS.join(' '),
  identifierQuotes: '"',
  doubleQuotedStrings: false,
  specialVar: '?:_'
});

/** The end of the first line of *input* (the magic line), as an offset. */
function firstLineEnd(input: Input): number {
  const head = input.read(0, Math.min(input.length, 4096));
  const newline = head.indexOf('\n');
  return newline < 0 ? input.length : newline;
}

/** The top node of a `%%pmsql` cell's tree: the magic line, then the SQL tree mounted after it. */
const cellType = NodeType.define({
  id: 0,
  name: 'PmsqlCell',
  top: true,
  props: [[languageDataProp, dialect.language.data]]
});

/**
 * The SQL parser on everything after the magic line, so the magic line is no SQL (an option such as
 * `--polars` is no SQL comment). Lezer builds the tree of a range relative to the range's start; the SQL
 * tree is therefore placed at its offset under a top node that spans the whole cell, or every token would
 * be coloured as many characters too early as the magic line is long. The SQL is parsed afresh on each
 * change (no fragments reused): a cell is short, and reusing nodes across the wrapper is not worth its risk.
 */
class AfterMagicLine extends Parser {
  constructor(private inner: Parser) {
    super();
  }

  createParse(input: Input): PartialParse {
    const start = Math.min(firstLineEnd(input) + 1, input.length);
    const wrap = (sql: Tree | null) =>
      new Tree(cellType, sql ? [sql] : [], sql ? [start] : [], input.length);
    if (start >= input.length) {
      return {
        advance: () => wrap(null),
        parsedPos: input.length,
        stopAt: () => undefined,
        stoppedAt: null
      };
    }
    const sql = this.inner.startParse(input, [], [{ from: start, to: input.length }]);
    return {
      advance: () => {
        const tree = sql.advance();
        return tree && wrap(tree);
      },
      get parsedPos() {
        return sql.parsedPos;
      },
      stopAt: (pos: number) => sql.stopAt(Math.max(pos, start)),
      get stoppedAt() {
        return sql.stoppedAt;
      }
    };
  }
}

const pmsqlLanguage = new Language(
  dialect.language.data,
  new AfterMagicLine(dialect.language.parser),
  [],
  'pmsql'
);

/**
 * Druid functions and special names, which JupyterLab's highlight style leaves uncoloured (it colours
 * `standard(variableName)`, lang-sql tags `standard(name)`): stable classes, coloured in style/index.css.
 */
const druidStyle = HighlightStyle.define([
  { tag: tags.standard(tags.name), class: 'pm-sql-function' },
  { tag: tags.special(tags.name), class: 'pm-sql-special' }
]);

const magicLine = Decoration.line({ class: 'pm-magic-line' });

/** The magic line's class, so it reads as a magic, not as SQL (the first line is always at offset 0). */
const magicLineDecoration = EditorView.decorations.of(
  Decoration.set([magicLine.range(0)])
);

/** What a `%%pmsql` editor gets: the language first (over the cell's Python), its classes, the magic line. */
const pmsql: Extension = [
  Prec.highest(pmsqlLanguage),
  syntaxHighlighting(druidStyle),
  syntaxHighlighting(classHighlighter),
  magicLineDecoration,
  EditorView.contentAttributes.of({ 'data-pm-language': 'pmsql' })
];

function isPmsql(doc: Text): boolean {
  return MAGIC.test(doc.line(1).text);
}

/** The extension of one editor: a compartment that holds `pmsql` exactly while the first line is the magic. */
function pmsqlSwitch(initial: string): Extension {
  const mode = new Compartment();
  const on = (doc: Text) => (isPmsql(doc) ? pmsql : []);
  return [
    mode.of(MAGIC.test(initial.split('\n', 1)[0]) ? pmsql : []),
    // every change (typed, pasted, or set by the notebook model) decides again
    EditorState.transactionExtender.of(tr => {
      if (!tr.docChanged) {
        return null;
      }
      const wanted = isPmsql(tr.newDoc);
      const active = mode.get(tr.startState) === pmsql;
      return wanted === active ? null : { effects: mode.reconfigure(on(tr.newDoc)) };
    }),
    // an editor whose text arrived before this extension (restored views) is put right once (after the
    // view's construction, when it may dispatch; decided again then, the text may have changed meanwhile)
    ViewPlugin.define(view => {
      const wrong = () => isPmsql(view.state.doc) !== (mode.get(view.state) === pmsql);
      if (wrong()) {
        queueMicrotask(() => {
          if (wrong()) {
            view.dispatch({ effects: mode.reconfigure(on(view.state.doc)) });
          }
        });
      }
      return {};
    })
  ];
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'pm-notebook:pmsql-highlighting',
  description: '%%pmsql cells highlighted as Druid SQL',
  autoStart: true,
  requires: [IEditorExtensionRegistry],
  activate: (app: JupyterFrontEnd, registry: IEditorExtensionRegistry) => {
    void app;
    registry.addExtension({
      name: 'pm-notebook:pmsql',
      factory: options =>
        EditorExtensionRegistry.createImmutableExtension(
          pmsqlSwitch(options.model.sharedModel.getSource())
        )
    });
  }
};

export default plugin;
