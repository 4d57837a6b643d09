// Tokens: generation, salted hashing and constant-time comparison (OpenSSL).
// Agent tokens are 256-bit random values, so one SHA-256 round over salt||token is enough:
// there is no password to brute-force. Tokens are never logged.
#pragma once

#include <string>
#include <string_view>

namespace benchfleet::rules {

// `bytes` cryptographically random bytes.
std::string random_bytes(std::size_t bytes);
// A new secret: 43 base64url characters (32 random bytes), for tokens.
std::string generate_secret();
// A new lease id: 32 hex characters (16 random bytes).
std::string generate_lease_id();
// SHA-256(salt || token), raw 32 bytes.
std::string hash_token(std::string_view salt, std::string_view token);
// Lower-case hex SHA-256 of `data`.
std::string sha256_hex(std::string_view data);
// Compares without leaking where the first difference is.
bool constant_time_equal(std::string_view a, std::string_view b);
// The token of an "Authorization: Bearer <token>" header value; empty if not that form.
std::string_view bearer_token(std::string_view authorization_header);

}  // namespace benchfleet::rules
