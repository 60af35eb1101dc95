// The request signer for server-to-server keys lives here (branch `client`);
// this file only keeps the target buildable until it arrives.
