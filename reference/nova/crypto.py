"""Key pairs' cryptography (``nova/crypto.py``): fingerprints and generated keys.

A key pair's *fingerprint* is what a user compares to be sure which key is
which: for an SSH key, the MD5 of the key's decoded base64 blob in hex pairs
(``aa:bb:…``, as ``ssh-keygen -l -E md5`` prints it); for an X.509 certificate
(Windows' WinRM), the SHA-1 of the certificate. A public key that does not
load is refused (``InvalidKeypair``, a 400), as upstream does by loading it
with ``cryptography`` before hashing it.

Upstream generates SSH keys with paramiko and X.509 certificates with the
``openssl`` command; novalab uses ``cryptography`` for both, writing the same
formats: an RSA key in the traditional PEM form with the public key ending in
``Generated-by-Nova``, and a self-signed client certificate for
``<user_id>@localhost`` whose private key is a base64 PKCS#12 bundle.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import hashlib

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID, ObjectIdentifier

from novalab.reference.nova import exception

# The UPN otherName of a WinRM client certificate (szOID_NT_PRINCIPAL_NAME).
_UPN = ObjectIdentifier("1.3.6.1.4.1.311.20.2.3")


def _colons(hex_digest: str) -> str:
    return ":".join(a + b for a, b in zip(hex_digest[::2], hex_digest[1::2], strict=True))


def generate_fingerprint(public_key: str) -> str:
    """The MD5 fingerprint of an OpenSSH public key (``ssh-rsa AAAA… comment``)."""
    try:
        serialization.load_ssh_public_key(public_key.encode("utf-8"))
        blob = base64.b64decode(public_key.split(" ")[1])
        return _colons(hashlib.md5(blob, usedforsecurity=False).hexdigest())
    except Exception as exc:
        raise exception.InvalidKeypair(reason="failed to generate fingerprint") from exc


def generate_x509_fingerprint(pem_key: str | bytes) -> str:
    """The SHA-1 fingerprint of a PEM certificate."""
    try:
        if isinstance(pem_key, str):
            pem_key = pem_key.encode("utf-8")
        cert = x509.load_pem_x509_certificate(pem_key)
        return _colons(binascii.hexlify(cert.fingerprint(hashes.SHA1())).decode("ascii"))
    except (ValueError, TypeError, binascii.Error) as exc:
        raise exception.InvalidKeypair(
            reason=f"failed to generate X509 fingerprint. Error message: {exc}") from exc


def generate_key_pair(bits: int = 2048) -> tuple[str, str, str]:
    """(private key, public key, fingerprint) of a new RSA key."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=bits)
    private_key = key.private_bytes(serialization.Encoding.PEM,
                                    serialization.PrivateFormat.TraditionalOpenSSL,
                                    serialization.NoEncryption()).decode("ascii")
    openssh = key.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                            serialization.PublicFormat.OpenSSH).decode()
    public_key = f"{openssh} Generated-by-Nova"
    return private_key, public_key, generate_fingerprint(public_key)


def generate_winrm_x509_cert(user_id: str, bits: int = 2048) -> tuple[str, str, str]:
    """(base64 PKCS#12 private key, PEM certificate, fingerprint) for WinRM's
    password-less login of ``user_id`` (a client certificate valid 3650 days)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=bits)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, user_id)])
    now = datetime.datetime.now(datetime.UTC)
    upn = f"{user_id}@localhost".encode()
    # An otherName's value is DER: a UTF8String (tag 12) inside an explicit [0].
    utf8 = b"\x0c" + _der_length(len(upn)) + upn
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now).not_valid_after(now + datetime.timedelta(days=3650))
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]),
                           critical=False)
            .add_extension(x509.SubjectAlternativeName([x509.OtherName(_UPN, utf8)]),
                           critical=False)
            .sign(key, hashes.SHA256()))
    certificate = cert.public_bytes(serialization.Encoding.PEM).decode("ascii")
    bundle = pkcs12.serialize_key_and_certificates(None, key, cert, None,
                                                   serialization.NoEncryption())
    return (base64.b64encode(bundle).decode("ascii"), certificate,
            generate_x509_fingerprint(certificate))


def _der_length(length: int) -> bytes:
    if length < 0x80:
        return bytes([length])
    encoded = length.to_bytes((length.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(encoded)]) + encoded
