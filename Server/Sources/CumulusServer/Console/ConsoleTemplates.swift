/// The console's pages as Mustache templates. Data goes in with `{{ }}`
/// alone, which the engine escapes (``ConsolePages``); `{{{ }}}` is never
/// used. Links are built by ``ConsoleLinks`` and escaped like any value.
enum ConsoleTemplates {
    /// Every template by name: the pages of this file and those each part
    /// of the console declares beside its routes.
    static let all: [String: String] = {
        var all: [String: String] = [:]
        for group in [pages, schemaPages, managePages, sharingPages] {
            for (name, text) in group {
                precondition(
                    all.updateValue(text, forKey: name) == nil, "Internal inconsistency: two console templates \(name)")
            }
        }
        return all
    }()

    /// The pages of the sign-in, the user's data and the failures.
    static let pages: [String: String] = [
        "head": head, "foot": foot, "signIn": signIn, "home": home, "users": users, "user": user, "zones": zones,
        "records": records, "record": record, "confirmEdit": confirmEdit, "confirmDelete": confirmDelete,
        "message": message, "failures": failures,
    ]

    static let head = """
        <!DOCTYPE html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="robots" content="noindex">
        <title>{{title}} · Cumulus console</title>
        <link rel="stylesheet" href="/console/style.css">
        </head>
        <body>
        <header>
        <a class="brand" href="/console/">Cumulus console</a>
        {{#session}}
        <nav><a href="/console/">Home</a> <a href="/console/failures">Failures</a> <a href="/console/load">Load</a></nav>
        <form method="post" action="/console/sign-out" class="inline">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <button type="submit">Sign out</button>
        </form>
        {{/session}}
        </header>
        <main>
        <h1>{{title}}</h1>

        """

    static let foot = """
        </main>
        </body>
        </html>

        """

    static let signIn = """
        {{> head}}
        {{#error}}<p class="error">{{error}}</p>{{/error}}
        <form method="post" action="/console/sign-in">
        <label for="token">Console token</label>
        <input type="password" id="token" name="token" autocomplete="off" required>
        <button type="submit">Sign in</button>
        </form>
        <p>Make a token with <code>cumulus console add --label NAME</code>.</p>
        {{> foot}}
        """

    static let home = """
        {{> head}}
        <form method="get" action="/console/users">
        <label for="container">Container</label>
        <input id="container" name="container" required>
        <button type="submit">Show its users</button>
        </form>
        <p><a href="/console/failures">Recent failed requests</a></p>
        {{> containerList}}
        {{> foot}}
        """

    static let users = """
        {{> head}}
        <p>Container <code>{{container}}</code></p>
        <table>
        <tr><th>Name</th><th>User record name</th><th>Email</th><th>Identities</th><th>Working tokens</th></tr>
        {{#users}}
        <tr><td><a href="{{link}}">{{name}}</a></td><td><code>{{recordName}}</code></td><td>{{email}}</td>
        <td>{{#identities}}<div><code>{{issuer}}</code> · <code>{{subject}}</code></div>{{/identities}}{{#blocked}} (blocked){{/blocked}}</td>
        <td>{{tokens}}</td></tr>
        {{/users}}
        </table>
        {{^users}}<p>No users.</p>{{/users}}
        {{> foot}}
        """

    static let user = """
        {{> head}}
        <p>User record name <code>{{recordName}}</code> in <code>{{container}}</code></p>
        <h2>Databases</h2>
        <ul>
        {{#databases}}<li><a href="{{link}}">{{environment}} · {{scope}}</a></li>{{/databases}}
        </ul>
        <h2>Web auth tokens</h2>
        <table>
        <tr><th>ID</th><th>Created</th><th>Expires</th></tr>
        {{#tokens}}<tr><td><code>{{id}}</code></td><td>{{created}}</td><td>{{expires}}</td></tr>{{/tokens}}
        </table>
        {{^tokens}}<p>No web auth tokens.</p>{{/tokens}}
        {{#tokens}}<p><a href="{{revokeLink}}">Revoke token <code>{{id}}</code>…</a></p>{{/tokens}}
        <p><a href="{{removeLink}}">Remove this user…</a></p>
        {{> userNotifications}}
        {{> foot}}
        """

    static let zones = """
        {{> head}}
        <p>As <code>{{user}}</code> sees the {{scope}} database of <code>{{container}}</code> ({{environment}})</p>
        <table>
        <tr><th>Zone</th><th>Owner</th></tr>
        {{#zones}}<tr><td><a href="{{link}}">{{name}}</a></td><td><code>{{owner}}</code></td>{{#sharesLink}}<td><a href="{{sharesLink}}">Shares</a></td>{{/sharesLink}}</tr>{{/zones}}
        </table>
        {{^zones}}<p>No zones.</p>{{/zones}}
        {{#zones}}{{#deleteLink}}<p><a href="{{deleteLink}}">Delete zone <code>{{name}}</code>…</a></p>{{/deleteLink}}{{/zones}}
        {{> foot}}
        """

    static let records = """
        {{> head}}
        <p>Zone <code>{{zone}}</code> of <code>{{owner}}</code>, as <code>{{user}}</code> sees it ({{scope}})</p>
        <table>
        <tr><th>Record</th><th>Type</th><th>Modified</th></tr>
        {{#records}}<tr><td><a href="{{link}}">{{name}}</a></td><td>{{type}}</td><td>{{modified}}</td></tr>{{/records}}
        </table>
        {{^records}}<p>No records on this page.</p>{{/records}}
        {{#next}}<p><a href="{{next}}">Next {{pageSize}} records</a></p>{{/next}}
        {{#queryLink}}<p><a href="{{queryLink}}">Query these records…</a></p>{{/queryLink}}
        <p><a href="{{exportLink}}">Export as JSON lines</a>{{#importLink}} · <a href="{{importLink}}">Import JSON lines…</a>{{/importLink}}</p>
        {{#sharesLink}}<p><a href="{{sharesLink}}">Shares</a> of this zone</p>{{/sharesLink}}
        <p><a href="{{deletedLink}}">Recently deleted</a></p>
        {{> foot}}
        """

    static let record = """
        {{> head}}
        <p>Zone <code>{{zone}}</code> of <code>{{owner}}</code>, as <code>{{user}}</code> sees it ({{scope}})</p>
        <h2>Metadata</h2>
        <dl>
        <dt>Type</dt><dd>{{type}}</dd>
        <dt>Change tag</dt><dd><code>{{changeTag}}</code></dd>
        <dt>Created</dt><dd>{{created}}</dd>
        <dt>Modified</dt><dd>{{modified}}</dd>
        {{#parent}}<dt>Parent</dt><dd><a href="{{parentLink}}">{{parent}}</a></dd>{{/parent}}
        {{#share}}<dt>Share</dt><dd><code>{{share}}</code></dd>{{/share}}
        </dl>
        <h2>Fields</h2>
        <table>
        <tr><th>Field</th><th>Type</th><th>Value</th><th></th></tr>
        {{#fields}}<tr><td><code>{{name}}</code></td><td>{{type}}</td><td class="value">{{value}}</td>
        <td>{{#editLink}}<a href="{{editLink}}">Edit</a>{{/editLink}}</td></tr>{{/fields}}
        </table>
        {{#hasAssets}}
        <h2>Assets</h2>
        <table>
        <tr><th>Field</th><th>Size</th><th>Checksum</th><th></th></tr>
        {{#assets}}<tr><td><code>{{field}}</code></td><td>{{size}}</td><td><code>{{checksum}}</code></td>
        <td>{{#download}}<a href="{{download}}">Download</a>{{/download}}</td></tr>{{/assets}}
        </table>
        {{/hasAssets}}
        {{> recordStanding}}
        <p><a href="{{deleteLink}}">Delete this record…</a></p>
        {{> foot}}
        """

    static let confirmEdit = """
        {{> head}}
        <p>Record <code>{{record}}</code> in zone <code>{{zone}}</code> of <code>{{owner}}</code>.
        The change is written as <code>{{owner}}</code>'s own <code>records/modify</code>: it gets a new change tag
        and reaches their devices.</p>
        <p>Field <code>{{field}}</code> ({{type}}) now holds:</p>
        <pre>{{current}}</pre>
        <form method="post" action="/console/edit">
        <input type="hidden" name="csrf" value="{{csrf}}">
        {{#hidden}}<input type="hidden" name="{{name}}" value="{{value}}">{{/hidden}}
        <label for="value">New value ({{type}})</label>
        {{#isText}}<textarea id="value" name="value" rows="6">
        {{current}}</textarea>{{/isText}}
        {{^isText}}<input id="value" name="value" value="{{current}}">{{/isText}}
        <button type="submit">Save the new value</button>
        </form>
        <p><a href="{{back}}">Cancel</a></p>
        {{> foot}}
        """

    static let confirmDelete = """
        {{> head}}
        <p>Delete record <code>{{record}}</code> ({{type}}) from zone <code>{{zone}}</code> of <code>{{owner}}</code>?
        It is deleted as <code>{{owner}}</code>'s own <code>records/modify</code> and disappears from their devices.</p>
        <form method="post" action="/console/delete">
        <input type="hidden" name="csrf" value="{{csrf}}">
        {{#hidden}}<input type="hidden" name="{{name}}" value="{{value}}">{{/hidden}}
        <button type="submit" class="danger">Delete the record</button>
        </form>
        <p><a href="{{back}}">Cancel</a></p>
        {{> foot}}
        """

    static let message = """
        {{> head}}
        <p{{#isError}} class="error"{{/isError}}>{{text}}</p>
        {{#back}}<p><a href="{{back}}">Back</a></p>{{/back}}
        {{> foot}}
        """

    static let failures = """
        {{> head}}
        <form method="get" action="/console/failures">
        <label for="uuid">Find a uuid</label>
        <input id="uuid" name="uuid" value="{{uuid}}">
        <button type="submit">Find</button>
        </form>
        <p>The last {{capacity}} failed requests this server answered, newest first.</p>
        <table>
        <tr><th>When</th><th>uuid</th><th>Request</th><th>Operation</th><th>User</th><th>Status</th><th>Error</th></tr>
        {{#failures}}<tr><td>{{date}}</td><td><code>{{uuid}}</code></td><td><code>{{request}}</code></td>
        <td>{{operation}}</td><td><code>{{user}}</code></td><td>{{status}}</td><td>{{code}}: {{reason}}</td></tr>{{/failures}}
        </table>
        {{^failures}}<p>No failed requests{{#uuid}} with this uuid{{/uuid}}.</p>{{/failures}}
        {{> foot}}
        """

    /// The stylesheet at `/console/style.css`: the only thing a page loads.
    static let stylesheet = """
        body { font-family: system-ui, sans-serif; margin: 0; color: #1d1d1f; background: #fafafa; }
        header { display: flex; gap: 1.5em; align-items: center; padding: 0.6em 1.2em; background: #1d3557; }
        header a, header button { color: #fff; }
        header .brand { font-weight: 600; text-decoration: none; }
        header form.inline { margin-left: auto; }
        header button { background: none; border: 1px solid #fff; border-radius: 4px; padding: 0.2em 0.8em; }
        main { padding: 1em 1.5em; max-width: 80em; }
        table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
        th, td { border-bottom: 1px solid #ddd; padding: 0.3em 0.8em; text-align: left; vertical-align: top; }
        td.value, pre { white-space: pre-wrap; word-break: break-word; max-width: 50em; }
        code { font-family: ui-monospace, monospace; word-break: break-all; }
        dt { font-weight: 600; } dd { margin: 0 0 0.5em 1em; }
        form { margin: 1em 0; } label { margin-right: 0.5em; }
        input { padding: 0.3em; min-width: 20em; }
        .error { color: #b00020; } button.danger { background: #b00020; color: #fff; }

        """
}
