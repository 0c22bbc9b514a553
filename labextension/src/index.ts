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
  syntaxHighlighting
} from '@codemirror/language';
import {
  Compartment,
  EditorState,
  Extension,
  Prec,
  Text
} from '@codemirror/state';
import {
  Decoration,
  DecorationSet,
  EditorView,
  ViewPlugin,
  ViewUpdate
} from '@codemirror/view';
import {
  Input,
  Parser,
  PartialParse,
  TreeFragment
} from '@lezer/common';
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

const FUNCTIONS = (druid.functions as string[]).map(name => name.toLowerCase());

/** Druid SQL as lang-sql's dialect: standard keywords and types, Druid's functions as builtins. */
const dialect = SQLDialect.define({
  keywords: `${SQL_KEYWORDS} ${DRUID_KEYWORDS}`,
  types: SQL_TYPES,
  builtin: FUNCTIONS.join(' '),
  identifierQuotes: '"',
  doubleQuotedStrings: false
});

/** The end of the first line of *input* (the magic line), as an offset. */
function firstLineEnd(input: Input): number {
  const head = input.read(0, Math.min(input.length, 4096));
  const newline = head.indexOf('\n');
  return newline < 0 ? input.length : newline;
}

/**
 * The SQL parser on everything after the magic line: lezer parses the given ranges only, so the magic
 * line is plain text to the SQL grammar (decorated as a magic below).
 */
class AfterMagicLine extends Parser {
  constructor(private inner: Parser) {
    super();
  }

  createParse(
    input: Input,
    fragments: readonly TreeFragment[],
    ranges: readonly { from: number; to: number }[]
  ): PartialParse {
    const start = Math.min(firstLineEnd(input) + 1, input.length);
    let clipped = ranges
      .filter(r => r.to > start)
      .map(r => ({ from: Math.max(r.from, start), to: r.to }));
    if (!clipped.length) {
      clipped = [{ from: input.length, to: input.length }];
    }
    return this.inner.createParse(input, fragments, clipped);
  }
}

const pmsqlLanguage = new Language(
  dialect.language.data,
  new AfterMagicLine(dialect.language.parser),
  [],
  'pmsql'
);

/** Druid functions as JupyterLab shows builtins; `pm-sql-function` is their stable class. */
const functionStyle = HighlightStyle.define([
  { tag: tags.standard(tags.name), class: 'pm-sql-function' }
]);

const magicLine = Decoration.line({ class: 'pm-magic-line' });

/** The magic line's class, so it reads as a magic, not as SQL. */
const magicLinePlugin = ViewPlugin.fromClass(
  class {
    decorations: DecorationSet;

    constructor(view: EditorView) {
      this.decorations = Decoration.set([magicLine.range(0)]);
      void view;
    }

    update(update: ViewUpdate): void {
      void update;
    }
  },
  { decorations: v => v.decorations }
);

/** What a `%%pmsql` editor gets: the language first (over the cell's Python), its classes, the magic line. */
const pmsql: Extension = [
  Prec.highest(pmsqlLanguage),
  syntaxHighlighting(functionStyle),
  syntaxHighlighting(classHighlighter),
  magicLinePlugin,
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
    // an editor whose text arrived before this extension (restored views) is put right once
    ViewPlugin.define(view => {
      const wanted = isPmsql(view.state.doc);
      if (wanted !== (mode.get(view.state) === pmsql)) {
        queueMicrotask(() =>
          view.dispatch({ effects: mode.reconfigure(on(view.state.doc)) })
        );
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
