extension ConsoleTemplates {
    /// The confirmations of deleting a zone, revoking a token and removing
    /// a user, and the import form.
    static let managePages: [String: String] = [
        "confirmDeleteZone": confirmDeleteZone, "confirmRevokeToken": confirmRevokeToken,
        "confirmRemoveUser": confirmRemoveUser, "importForm": importForm,
    ]

    static let confirmDeleteZone = """
        {{> head}}
        <p>Delete zone <code>{{zone}}</code> of <code>{{user}}</code> in <code>{{container}}</code> ({{environment}})?</p>
        <p>It is deleted as <code>{{user}}</code>'s own <code>zones/modify</code>: every record in it goes, their
        devices are told the zone is gone, and the participants of its shares lose it.</p>
        <form method="post" action="/console/delete-zone">
        <input type="hidden" name="csrf" value="{{csrf}}">
        {{#hidden}}<input type="hidden" name="{{name}}" value="{{value}}">{{/hidden}}
        <button type="submit" class="danger">Delete the zone and its records</button>
        </form>
        <p><a href="{{back}}">Cancel</a></p>
        {{> foot}}
        """

    static let confirmRevokeToken = """
        {{> head}}
        <p>Revoke web auth token <code>{{id}}</code> of <code>{{name}}</code> in <code>{{container}}</code>
        (created {{created}})?</p>
        <p>It stops working on every server at once, as with <code>cumulus token revoke --id</code>; the device
        that uses it is refused with <code>AUTHENTICATION_FAILED</code>. The user's other tokens keep working.</p>
        <form method="post" action="/console/revoke-token">
        <input type="hidden" name="csrf" value="{{csrf}}">
        {{#hidden}}<input type="hidden" name="{{name}}" value="{{value}}">{{/hidden}}
        <button type="submit" class="danger">Revoke the token</button>
        </form>
        <p><a href="{{back}}">Cancel</a></p>
        {{> foot}}
        """

    static let confirmRemoveUser = """
        {{> head}}
        <p>Remove user <code>{{name}}</code> (<code>{{recordName}}</code>) from <code>{{container}}</code>?
        As with <code>cumulus user remove</code>:</p>
        <ul>
        <li>their {{tokens}} working web auth tokens are revoked: they fail on every server at once;</li>
        <li>the identities they sign in with are forgotten: a provider's next token for them makes a new user,
        unless you block the identities below;</li>
        <li>with "delete", their private zones, the shares they own (participants lose them), their public records,
        their place in others' shares, their subscriptions and notification channels are deleted by the protocol's
        rules; with "keep", all of it stays as it is and their shares keep working for participants.</li>
        </ul>
        {{#hasIdentities}}
        <p>Identities:</p>
        <ul>{{#identities}}<li><code>{{issuer}}</code> · <code>{{subject}}</code></li>{{/identities}}</ul>
        {{/hasIdentities}}
        <form method="post" action="/console/remove-user">
        <input type="hidden" name="csrf" value="{{csrf}}">
        {{#hidden}}<input type="hidden" name="{{name}}" value="{{value}}">{{/hidden}}
        <p><input type="radio" id="keep" name="data" value="keep" required> <label for="keep">Keep their data</label>
        <input type="radio" id="delete" name="data" value="delete"> <label for="delete">Delete their data</label></p>
        {{#hasIdentities}}<p><input type="checkbox" id="block" name="block" value="yes">
        <label for="block">Also block these identities (as <code>cumulus user block</code>)</label></p>{{/hasIdentities}}
        <button type="submit" class="danger">Remove the user</button>
        </form>
        <p><a href="{{back}}">Cancel</a></p>
        {{> foot}}
        """

    static let importForm = """
        {{> head}}
        <p>Import records into zone <code>{{zone}}</code> of <code>{{user}}</code> in <code>{{container}}</code>
        (development).</p>
        <p>Paste JSON lines, one record's wire JSON a line, as <em>Export as JSON lines</em> writes them. They are
        written as <code>{{user}}</code>'s own <code>records/modify</code> creates, {{batchSize}} a request; the zone
        is created if it is missing. A record whose name the zone already holds is refused (<code>EXISTS</code>), not
        overwritten. Change tags and creation stamps are dropped (the records get new ones); a share record, a
        record's share and asset fields are not imported. Every line is read before anything is written: a bad line
        writes nothing.</p>
        <form method="post" action="/console/import">
        <input type="hidden" name="csrf" value="{{csrf}}">
        {{#hidden}}<input type="hidden" name="{{name}}" value="{{value}}">{{/hidden}}
        <label for="lines">JSON lines</label>
        <textarea id="lines" name="lines" rows="16" cols="100" required></textarea>
        <button type="submit">Import</button>
        </form>
        <p><a href="{{back}}">Cancel</a></p>
        {{> foot}}
        """
}
