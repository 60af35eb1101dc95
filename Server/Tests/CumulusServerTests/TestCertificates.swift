import Foundation

/// A self-signed certificate for `localhost` and `127.0.0.1`, valid from
/// 2020 to 2120, its key, and a key of another certificate: test material
/// only, made with `openssl ca -selfsign`.
enum TestCertificates {
    static let certificate = """
        -----BEGIN CERTIFICATE-----
        MIIBZzCCAQ2gAwIBAgIBATAKBggqhkjOPQQDAjAUMRIwEAYDVQQDDAlsb2NhbGhv
        c3QwIBcNMjAwMTAxMDAwMDAwWhgPMjEyMDAxMDEwMDAwMDBaMBQxEjAQBgNVBAMM
        CWxvY2FsaG9zdDBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABGOj9g3nsnfyfD79
        QF8fVYHxrm7O+vM8jtbeP3faa0KHimwnqu30YjhIJLtDwkHkUHlaFCE//rdMzWI7
        rT6MnQajTjBMMA8GA1UdEwEB/wQFMAMBAf8wGgYDVR0RBBMwEYIJbG9jYWxob3N0
        hwR/AAABMB0GA1UdDgQWBBSRfD91zgMgeF0RLoOWO678VBpQyTAKBggqhkjOPQQD
        AgNIADBFAiA8nkSQUfC5bV2YFpTn0RPSCZ8gRCQ66hZ79KaM9NPklgIhAKTSRdP3
        oyPIyXmq/i/xiNsDMshEOkYU/7i/o9re977A
        -----END CERTIFICATE-----
        """

    static let key = """
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgO4/+RGerkxQu5tOc
        DpPb8uvKS/665qSnNiczDyGX3UOhRANCAARjo/YN57J38nw+/UBfH1WB8a5uzvrz
        PI7W3j932mtCh4psJ6rt9GI4SCS7Q8JB5FB5WhQhP/63TM1iO60+jJ0G
        -----END PRIVATE KEY-----
        """

    static let otherKey = """
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg3msKjN/6zKpAN1hx
        jPsOscRvjkA76+7+rc0q+cJqPDehRANCAASWnCCEnHinT2AhnAlpJuE36boLTDM3
        VZucBpJLDH6/OJM6vlDH4D4so1eHiCyFEMM1qnNhuF2wpJ4R+4miOAp4
        -----END PRIVATE KEY-----
        """

    /// The three written to files in `directory`: (certificate, key, other key).
    static func write(to directory: URL) throws -> (certificate: String, key: String, otherKey: String) {
        let paths = (
            directory.appendingPathComponent("cert.pem").path, directory.appendingPathComponent("key.pem").path,
            directory.appendingPathComponent("other.pem").path
        )
        try Data(certificate.utf8).write(to: URL(fileURLWithPath: paths.0))
        try Data(key.utf8).write(to: URL(fileURLWithPath: paths.1))
        try Data(otherKey.utf8).write(to: URL(fileURLWithPath: paths.2))
        return paths
    }
}
