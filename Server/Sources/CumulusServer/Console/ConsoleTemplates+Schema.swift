extension ConsoleTemplates {
    /// The pages of the containers, their schemas and the query form.
    static let schemaPages: [String: String] = [
        "containerList": containerList, "container": container, "schema": schema, "confirmDeploy": confirmDeploy,
        "confirmAddField": confirmAddField, "query": query,
    ]

    /// The home page's list of containers (a partial of `home`).
    static let containerList = """
        <h2>Containers</h2>
        <ul>
        {{#containers}}<li><a href="{{link}}">{{name}}</a></li>{{/containers}}
        </ul>
        {{^containers}}<p>No containers yet: make one with <code>cumulus container add</code>.</p>{{/containers}}

        """

    static let container = """
        {{> head}}
        <p>Container <code>{{container}}</code></p>
        <ul>
        <li><a href="{{usersLink}}">Users</a></li>
        <li><a href="{{schemaLink}}">Schema</a></li>
        </ul>
        <h2>Identity issuers</h2>
        <table>
        <tr><th>Issuer</th><th>Audiences</th><th>Key set</th></tr>
        {{#issuers}}<tr><td><code>{{issuer}}</code></td><td>{{#audiences}}<div><code>{{.}}</code></div>{{/audiences}}</td>
        <td>{{#keySetURL}}<code>{{keySetURL}}</code>{{/keySetURL}}{{^keySetURL}}stored{{/keySetURL}}</td></tr>{{/issuers}}
        </table>
        {{^issuers}}<p>No identity issuers.</p>{{/issuers}}
        <h2>Server-to-server keys</h2>
        <table>
        <tr><th>Key ID</th><th>Fingerprint (SHA-256 of the DER key)</th></tr>
        {{#keys}}<tr><td><code>{{id}}</code></td><td><code>{{fingerprint}}</code></td></tr>{{/keys}}
        </table>
        {{^keys}}<p>No server-to-server keys.</p>{{/keys}}
        {{> foot}}
        """

    static let schema = """
        {{> head}}
        <p>Container <code>{{container}}</code> · <a href="{{containerLink}}">Container</a></p>
        {{#types}}
        <h2><code>{{name}}</code></h2>
        <table>
        <tr><th>Field</th><th>Development</th><th>Production</th><th></th></tr>
        {{#fields}}<tr><td><code>{{name}}</code></td><td>{{development}}</td><td>{{production}}</td>
        <td>{{#deployable}}<strong>deploying adds it</strong>{{/deployable}}{{#mismatch}}<span class="error">types differ</span>{{/mismatch}}</td></tr>{{/fields}}
        </table>
        {{/types}}
        {{^types}}<p>Neither schema has a field yet.</p>{{/types}}
        <h2>Deploy</h2>
        {{#deployCount}}<p>Deploying would add {{deployCount}} field types to production.</p>{{/deployCount}}
        {{^deployCount}}<p>Production has every field development has.</p>{{/deployCount}}
        {{#mismatches}}<p class="error">{{mismatches}} fields have another type in production: deploying is refused.</p>{{/mismatches}}
        <p><a href="{{deployLink}}">Deploy the development schema to production…</a></p>
        <h2>Add a field to development</h2>
        <form method="get" action="/console/add-field">
        <input type="hidden" name="container" value="{{container}}">
        <label for="recordType">Record type</label>
        <input id="recordType" name="recordType" required>
        <label for="field">Field</label>
        <input id="field" name="field" required>
        <label for="type">Type</label>
        <select id="type" name="type">
        {{#fieldTypes}}<option value="{{.}}">{{.}}</option>{{/fieldTypes}}
        </select>
        <button type="submit">Add…</button>
        </form>
        {{> foot}}
        """

    static let confirmDeploy = """
        {{> head}}
        <p>Copy the development schema of <code>{{container}}</code> to production? Production then accepts
        these fields from every app; a field deployed stays.</p>
        <table>
        <tr><th>Record type</th><th>Field</th><th>Type</th></tr>
        {{#added}}<tr><td><code>{{recordType}}</code></td><td><code>{{name}}</code></td><td>{{development}}</td></tr>{{/added}}
        </table>
        {{^added}}<p>Nothing to add: production has every field development has.</p>{{/added}}
        {{#mismatches}}<p class="error">{{mismatches}} fields have another type in production: the deploy will be refused.</p>{{/mismatches}}
        <form method="post" action="/console/deploy">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <input type="hidden" name="container" value="{{container}}">
        <button type="submit" class="danger">Deploy to production</button>
        </form>
        <p><a href="{{back}}">Cancel</a></p>
        {{> foot}}
        """

    static let confirmAddField = """
        {{> head}}
        <p>Give field <code>{{field}}</code> of record type <code>{{recordType}}</code> the type {{type}} in the
        development schema of <code>{{container}}</code>? Writes of other types to it are then refused, and a
        deploy copies it to production.</p>
        <form method="post" action="/console/add-field">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <input type="hidden" name="container" value="{{container}}">
        <input type="hidden" name="recordType" value="{{recordType}}">
        <input type="hidden" name="field" value="{{field}}">
        <input type="hidden" name="type" value="{{type}}">
        <button type="submit">Add the field</button>
        </form>
        <p><a href="{{back}}">Cancel</a></p>
        {{> foot}}
        """

    static let query = """
        {{> head}}
        <p>Zone <code>{{zone}}</code> of <code>{{owner}}</code>, as <code>{{user}}</code> sees it ({{scope}},
        {{environment}}) · <a href="{{recordsLink}}">All records</a></p>
        <form method="get" action="/console/query">
        {{#hidden}}<input type="hidden" name="{{name}}" value="{{value}}">{{/hidden}}
        <div><label for="recordType">Record type</label><input id="recordType" name="recordType" value="{{recordType}}" required></div>
        <div><label for="prefix">Record name begins with</label><input id="prefix" name="prefix" value="{{prefix}}"></div>
        {{#filters}}
        <div><label for="field{{index}}">Field</label><input id="field{{index}}" name="field{{index}}" value="{{field}}">
        <select name="comparator{{index}}" aria-label="Comparator">
        {{#comparators}}<option value="{{name}}"{{#selected}} selected{{/selected}}>{{name}}</option>{{/comparators}}
        </select>
        <input name="value{{index}}" value="{{value}}" aria-label="Value">
        <select name="valueType{{index}}" aria-label="Value type">
        {{#valueTypes}}<option value="{{name}}"{{#selected}} selected{{/selected}}>{{label}}</option>{{/valueTypes}}
        </select></div>
        {{/filters}}
        <div><label for="sort">Sort by field</label><input id="sort" name="sort" value="{{sort}}">
        <select name="order" aria-label="Order">
        <option value="ascending"{{^descending}} selected{{/descending}}>ascending</option>
        <option value="descending"{{#descending}} selected{{/descending}}>descending</option>
        </select></div>
        <button type="submit">Query</button>
        </form>
        {{#error}}<p class="error">{{error}}</p>{{/error}}
        {{#ran}}
        <h2>Records</h2>
        <table>
        <tr><th>Record</th><th>Type</th><th>Modified</th></tr>
        {{#records}}<tr><td><a href="{{link}}">{{name}}</a></td><td>{{type}}</td><td>{{modified}}</td></tr>{{/records}}
        </table>
        {{^records}}<p>No records on this page.</p>{{/records}}
        {{#next}}<p><a href="{{next}}">Next {{pageSize}} records</a></p>{{/next}}
        {{/ran}}
        {{#body}}
        <h2>The <code>records/query</code> request</h2>
        <p><code>POST {{path}}</code></p>
        <pre>{{body}}</pre>
        {{/body}}
        {{> foot}}
        """
}
