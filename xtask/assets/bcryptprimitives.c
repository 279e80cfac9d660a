/*
 * Test-only stand-in for Windows' bcryptprimitives.dll, for running Rust
 * programs under Wine 8.0, which lacks ProcessPrng (Rust's std asks it
 * for random bytes since Rust 1.78). It answers from advapi32's
 * RtlGenRandom (SystemFunction036). `cargo xtask cross-check` builds it
 * into target/ and puts it beside the binary in a scratch directory; it
 * is never part of a wheel, and a real Windows never loads it.
 */
#include <windows.h>
#include <ntsecapi.h>

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
    while (len > 0) {
        ULONG chunk = len > 0x10000000 ? 0x10000000 : (ULONG)len;
        if (!RtlGenRandom(data, chunk)) {
            return FALSE;
        }
        data += chunk;
        len -= chunk;
    }
    return TRUE;
}
