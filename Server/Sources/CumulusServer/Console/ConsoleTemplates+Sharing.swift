extension ConsoleTemplates {
    /// The pages of shares, a record's standing, a user's subscriptions and
    /// channels, and the server's load.
    static let sharingPages: [String: String] = [
        "shares": shares, "shareReach": shareReach, "recordStanding": recordStanding,
        "userNotifications": userNotifications, "load": load, "deleted": deleted,
    ]

    static let shares = """
        {{> head}}
        <p>Zone <code>{{zone}}</code> of <code>{{owner}}</code> ({{environment}}) · <a href="{{recordsLink}}">Records</a></p>
        {{#shares}}
        <h2>Share <a href="{{link}}">{{recordName}}</a></h2>
        <dl>
        {{#title}}<dt>Title</dt><dd>{{title}}</dd>{{/title}}
        <dt>Covers</dt><dd>{{#root}}the records under <a href="{{rootLink}}">{{root}}</a> (through <code>parent</code>){{/root}}{{^root}}the whole zone{{/root}}</dd>
        <dt>Public permission</dt><dd>{{publicPermission}}</dd>
        <dt>Owner</dt><dd><code>{{owner}}</code></dd>
        </dl>
        <table>
        <tr><th>User record name</th><th>Email</th><th>Acceptance</th><th>Permission</th><th>Role</th></tr>
        {{#participants}}<tr><td><code>{{user}}</code></td><td>{{email}}</td><td>{{status}}</td><td>{{permission}}</td><td>{{role}}</td></tr>{{/participants}}
        </table>
        {{/shares}}
        {{^shares}}<p>The zone has no shares.</p>{{/shares}}
        <h2>Would a user see a record?</h2>
        <p>Answered by the user's own <code>records/lookup</code> in their shared database, with the reason.</p>
        <form method="get" action="/console/share-reach">
        {{#hidden}}<input type="hidden" name="{{name}}" value="{{value}}">{{/hidden}}
        <label for="viewer">User (name or record name)</label>
        <input id="viewer" name="viewer" required>
        <label for="record">Record name</label>
        <input id="record" name="record" value="{{record}}" required>
        <button type="submit">Ask</button>
        </form>
        {{> foot}}
        """

    static let shareReach = """
        {{> head}}
        <p>Would <code>{{viewer}}</code> see record <code>{{record}}</code> of zone <code>{{zone}}</code> of <code>{{owner}}</code> ({{environment}})?</p>
        <h2>Answer</h2>
        <p>{{answer}}{{#seenLink}} <a href="{{seenLink}}">See it as they do</a>{{/seenLink}}</p>
        <h2>Why</h2>
        <p>{{reason}}</p>
        {{#disagree}}<p class="error">{{disagree}}</p>{{/disagree}}
        <p><a href="{{back}}">Back to the shares</a></p>
        {{> foot}}
        """

    /// The record page's history and shares (a partial of `record`).
    static let recordStanding = """
        {{#hasStanding}}
        <h2>Shared by</h2>
        {{#coveringShares}}<p>{{#isZoneShare}}The zone share{{/isZoneShare}}{{^isZoneShare}}The share of <code>{{root}}</code>{{/isZoneShare}}:
        <a href="{{link}}">{{recordName}}</a></p>{{/coveringShares}}
        {{^coveringShares}}<p>No share covers this record.</p>{{/coveringShares}}
        {{#hasAncestors}}<p>Ancestors through <code>parent</code>, nearest first:
        {{#ancestors}}<a href="{{link}}">{{name}}</a> {{/ancestors}}</p>{{/hasAncestors}}
        <h2>History</h2>
        <p>Storage keeps the current version of a record only: older versions and their values are not kept.
        What it has: the creation and the last change (above, with who made them), the change tag, and the
        zone serial of the last change. A deleted record leaves a tombstone (its name, type and serial) for sync.</p>
        <dl>
        <dt>Last change</dt><dd>zone change {{serial}}</dd>
        <dt>The zone's last change</dt><dd>zone change {{zoneSerial}} ({{laterChanges}} changes of the zone since)</dd>
        </dl>
        {{/hasStanding}}
        """

    /// The user page's subscriptions and channels (a partial of `user`).
    static let userNotifications = """
        <h2>Subscriptions</h2>
        {{#subscriptionDatabases}}
        <h3>{{environment}} · {{scope}}</h3>
        <table>
        <tr><th>ID</th><th>Type</th><th>Zone</th><th>Record type</th><th>Filter</th><th>Fires on</th></tr>
        {{#subscriptions}}<tr><td><code>{{id}}</code></td><td>{{type}}</td><td><code>{{zone}}</code></td><td>{{recordType}}</td>
        <td>{{#filters}}<div><code>{{.}}</code></div>{{/filters}}</td><td>{{firesOn}}</td></tr>{{/subscriptions}}
        </table>
        {{/subscriptionDatabases}}
        {{^subscriptionDatabases}}<p>No subscriptions.</p>{{/subscriptionDatabases}}
        <h2>Notification channels</h2>
        <p>The store keeps when a poll last used a channel and the database's serial when it was opened, not
        when it was opened.</p>
        <table>
        <tr><th>Environment</th><th>Database</th><th>Opened at serial</th><th>Last used</th></tr>
        {{#channels}}<tr><td>{{environment}}</td><td>{{scope}}</td><td>{{start}}</td><td>{{lastUsed}}</td></tr>{{/channels}}
        </table>
        {{^channels}}<p>No open channels.</p>{{/channels}}
        """

    static let deleted = """
        {{> head}}
        <p>Zone <code>{{zone}}</code> of <code>{{owner}}</code>, as <code>{{user}}</code> sees it ({{scope}}) · <a href="{{recordsLink}}">Records</a></p>
        <p>The records deleted among the zone's last {{window}} changes, newest first. Storage keeps a deleted
        record's tombstone (its name, type and the serial of its deletion) for sync, not its fields.</p>
        <table>
        <tr><th>Record</th><th>Type</th><th>Deleted at zone change</th></tr>
        {{#deleted}}<tr><td><code>{{name}}</code></td><td>{{type}}</td><td>{{serial}}</td></tr>{{/deleted}}
        </table>
        {{^deleted}}<p>No deletions among them.</p>{{/deleted}}
        {{> foot}}
        """

    static let load = """
        {{> head}}
        <p>Requests this server answered since it started {{uptime}} seconds ago, and in the last minute.
        Latency bounds come from a histogram: “≤ 50 ms” means the quantile falls in the bucket up to 50 ms.
        The notification long poll waits by design: it is left out of the overall latencies.</p>
        <h2>Overall</h2>
        <dl>
        <dt>Requests</dt><dd>{{overall.requests}} ({{lastMinute}} in the last minute, {{rate}} a second)</dd>
        <dt>Errors</dt><dd>{{overall.clientErrors}} client (4xx), {{overall.serverErrors}} server (5xx); {{lastMinuteErrors}} server errors in the last minute</dd>
        <dt>Latency</dt><dd>mean {{overall.mean}}, p50 {{overall.p50}}, p95 {{overall.p95}}, p99 {{overall.p99}}, longest {{overall.longest}}</dd>
        </dl>
        <h2>By operation</h2>
        <table>
        <tr><th>Operation</th><th>Requests</th><th>Last minute</th><th>4xx</th><th>5xx</th><th>Mean</th><th>p95</th><th>Longest</th></tr>
        {{#operations}}<tr><td><code>{{name}}</code></td><td>{{requests}}</td><td>{{lastMinute}}</td><td>{{clientErrors}}</td>
        <td>{{serverErrors}}</td><td>{{mean}}</td><td>{{p95}}</td><td>{{longest}}</td></tr>{{/operations}}
        </table>
        {{^operations}}<p>No requests yet.</p>{{/operations}}
        <h2>Storage</h2>
        <dl>
        <dt>Database</dt><dd>{{databaseBytes}}</dd>
        <dt>Assets</dt><dd>{{assetCount}} assets, {{assetBytes}}</dd>
        </dl>
        {{> foot}}
        """
}
