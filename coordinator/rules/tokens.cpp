#include "coordinator/rules/tokens.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <cctype>
#include <cstdint>
#include <memory>

#include <stdexcept>

namespace benchfleet::rules {
namespace {

std::string hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 0xf];
  }
  return out;
}

std::string base64url(std::string_view bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  std::uint32_t buffer = 0;
  int bits = 0;
  for (unsigned char c : bytes) {
    buffer = (buffer << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out += kAlphabet[(buffer >> bits) & 0x3f];
    }
  }
  if (bits > 0) out += kAlphabet[(buffer << (6 - bits)) & 0x3f];
  return out;
}

}  // namespace

std::string random_bytes(std::size_t bytes) {
  std::string out(bytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(bytes)) != 1) {
    // Without a working CSPRNG no token can be issued safely; this is not recoverable.
    throw std::runtime_error("OpenSSL RAND_bytes failed");
  }
  return out;
}

std::string generate_secret() { return base64url(random_bytes(32)); }

std::string generate_lease_id() { return hex(random_bytes(16)); }

std::string hash_token(std::string_view salt, std::string_view token) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  std::string out(EVP_MAX_MD_SIZE, '\0');
  unsigned int length = 0;
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1 ||
      EVP_DigestUpdate(ctx.get(), salt.data(), salt.size()) != 1 ||
      EVP_DigestUpdate(ctx.get(), token.data(), token.size()) != 1 ||
      EVP_DigestFinal_ex(ctx.get(), reinterpret_cast<unsigned char*>(out.data()), &length) != 1) {
    throw std::runtime_error("OpenSSL SHA-256 failed");
  }
  out.resize(length);
  return out;
}

std::string sha256_hex(std::string_view data) { return hex(hash_token({}, data)); }

bool constant_time_equal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string_view bearer_token(std::string_view header) {
  constexpr std::string_view kPrefix = "Bearer ";
  if (header.size() <= kPrefix.size()) return {};
  for (std::size_t i = 0; i < kPrefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(header[i])) != std::tolower(static_cast<unsigned char>(kPrefix[i]))) {
      return {};
    }
  }
  return header.substr(kPrefix.size());
}

}  // namespace benchfleet::rules
