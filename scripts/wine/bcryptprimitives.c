// A stand-in for Windows' bcryptprimitives.dll, which Wine 8 lacks: Rust's std (1.78 and later) imports ProcessPrng
// from it for its random numbers, so without it no Rust binary loads under Wine ("Module not found"). ProcessPrng
// fills the buffer from RtlGenRandom (SystemFunction036 in advapi32), in pieces that fit its ULONG length.
// scripts/wine.js builds it with mingw-w64 into the Wine prefix's system32, only when Wine has no DLL of this name.
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length) {
  while (length > 0) {
    ULONG n = length > 0x10000000 ? 0x10000000 : (ULONG)length;
    if (!SystemFunction036(data, n)) return FALSE;
    data += n;
    length -= n;
  }
  return TRUE;
}
