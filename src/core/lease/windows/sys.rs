//! The few Win32 calls the Windows backend makes, declared here rather than through a bindings crate: named events,
//! byte-range locks, file identities and the ProgramData folder. Every handle is owned (`OwnedHandle`, `File`) and
//! not inheritable, so a child process never holds a claim or a lock of this one.

#![allow(clippy::upper_case_acronyms)]

use std::ffi::{c_void, OsString};
use std::fs::{File, OpenOptions};
use std::os::windows::ffi::OsStringExt;
use std::os::windows::fs::OpenOptionsExt;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
use std::path::{Path, PathBuf};

type HANDLE = *mut c_void;
type BOOL = i32;

#[repr(C)]
struct OVERLAPPED {
    internal: usize,
    internal_high: usize,
    offset: u32,
    offset_high: u32,
    event: HANDLE,
}

#[repr(C)]
#[derive(Default)]
struct FILE_ID_INFO {
    volume_serial_number: u64,
    file_id: [u8; 16],
}

#[repr(C)]
#[derive(Default)]
struct FILE_STANDARD_INFO {
    allocation_size: i64,
    end_of_file: i64,
    number_of_links: u32,
    delete_pending: u8,
    directory: u8,
}

#[repr(C)]
struct GUID {
    data1: u32,
    data2: u16,
    data3: u16,
    data4: [u8; 8],
}

#[link(name = "kernel32")]
extern "system" {
    fn CreateEventW(attributes: *const c_void, manual_reset: BOOL, initial_state: BOOL, name: *const u16) -> HANDLE;
    fn OpenEventW(access: u32, inherit: BOOL, name: *const u16) -> HANDLE;
    fn CloseHandle(handle: HANDLE) -> BOOL;
    fn SetLastError(code: u32);
    fn LockFileEx(file: HANDLE, flags: u32, reserved: u32, low: u32, high: u32, overlapped: *mut OVERLAPPED) -> BOOL;
    fn GetFileInformationByHandleEx(file: HANDLE, class: i32, info: *mut c_void, size: u32) -> BOOL;
    fn GetSystemWindowsDirectoryW(buffer: *mut u16, size: u32) -> u32;
}

#[link(name = "kernel32")]
extern "system" {
    fn GetCurrentProcess() -> HANDLE;
    fn LocalFree(memory: *mut c_void) -> *mut c_void;
}

#[link(name = "advapi32")]
extern "system" {
    fn GetSecurityInfo(
        handle: HANDLE,
        object_type: i32,
        info: u32,
        owner: *mut *mut c_void,
        group: *mut *mut c_void,
        dacl: *mut *mut c_void,
        sacl: *mut *mut c_void,
        descriptor: *mut *mut c_void,
    ) -> u32;
    fn OpenProcessToken(process: HANDLE, access: u32, token: *mut HANDLE) -> BOOL;
    fn GetTokenInformation(token: HANDLE, class: i32, info: *mut c_void, length: u32, returned: *mut u32) -> BOOL;
    fn EqualSid(a: *mut c_void, b: *mut c_void) -> BOOL;
    fn IsWellKnownSid(sid: *mut c_void, kind: i32) -> BOOL;
    fn ConvertSidToStringSidW(sid: *mut c_void, text: *mut *mut u16) -> BOOL;
}

#[link(name = "shell32")]
extern "system" {
    fn SHGetKnownFolderPath(id: *const GUID, flags: u32, token: HANDLE, path: *mut *mut u16) -> i32;
}

#[link(name = "ole32")]
extern "system" {
    fn CoTaskMemFree(memory: *mut c_void);
}

pub const ERROR_FILE_NOT_FOUND: i32 = 2;
pub const ERROR_PATH_NOT_FOUND: i32 = 3;
pub const ERROR_ACCESS_DENIED: i32 = 5;
pub const ERROR_SHARING_VIOLATION: i32 = 32;
pub const ERROR_LOCK_VIOLATION: i32 = 33;
pub const ERROR_ALREADY_EXISTS: i32 = 183;

const FILE_SHARE_READ: u32 = 1;
const FILE_SHARE_WRITE: u32 = 2;
const FILE_SHARE_DELETE: u32 = 4;
const FILE_READ_ATTRIBUTES: u32 = 0x80;
const FILE_FLAG_BACKUP_SEMANTICS: u32 = 0x0200_0000;
const FILE_FLAG_OPEN_REPARSE_POINT: u32 = 0x0020_0000;
pub const FILE_ATTRIBUTE_DIRECTORY: u32 = 0x10;
pub const FILE_ATTRIBUTE_REPARSE_POINT: u32 = 0x400;
const LOCKFILE_FAIL_IMMEDIATELY: u32 = 1;
const LOCKFILE_EXCLUSIVE_LOCK: u32 = 2;
const SYNCHRONIZE: u32 = 0x0010_0000;
const FILE_STANDARD_INFO_CLASS: i32 = 1;
const FILE_ID_INFO_CLASS: i32 = 18;
/// GetSecurityInfo's object type and information class, and the token's.
const SE_FILE_OBJECT: i32 = 1;
const OWNER_SECURITY_INFORMATION: u32 = 1;
const TOKEN_QUERY: u32 = 8;
const TOKEN_USER_CLASS: i32 = 1;
/// The owners trusted as Unix's root is, as well-known SID kinds: SYSTEM (WinLocalSystemSid) and the Administrators
/// group (WinBuiltinAdministratorsSid).
const MACHINE_SIDS: [i32; 2] = [22, 26];
/// FOLDERID_ProgramData, {62AB5D82-FDC1-4DC3-A9DD-070D1D495D97}.
const FOLDERID_PROGRAM_DATA: GUID =
    GUID { data1: 0x62AB_5D82, data2: 0xFDC1, data3: 0x4DC3, data4: [0xA9, 0xDD, 0x07, 0x0D, 0x1D, 0x49, 0x5D, 0x97] };

/// `text` as a NUL-terminated UTF-16 string.
fn wide(text: &str) -> Vec<u16> {
    text.encode_utf16().chain(Some(0)).collect()
}

/// A handle from a call that returns NULL on failure: owned, or the thread's last error.
fn owned(handle: HANDLE) -> std::io::Result<OwnedHandle> {
    if handle.is_null() {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a handle a call has just returned, which nothing else owns.
    Ok(unsafe { OwnedHandle::from_raw_handle(handle) })
}

/// Makes or opens the named event `name` (with its namespace's prefix, such as `Global\`): its handle, and whether
/// it existed before.
pub fn create_event_raw(name: &str) -> std::io::Result<(OwnedHandle, bool)> {
    let name = wide(name);
    // SAFETY: SetLastError has no preconditions; `name` is NUL-terminated. CreateEventW leaves ERROR_ALREADY_EXISTS
    // when the event existed.
    let handle = unsafe {
        SetLastError(0);
        CreateEventW(std::ptr::null(), 1, 0, name.as_ptr())
    };
    let existed = std::io::Error::last_os_error().raw_os_error() == Some(ERROR_ALREADY_EXISTS);
    Ok((owned(handle)?, existed))
}

/// Makes the named event `name`: `Ok(Some)` when this call made it, `Ok(None)` when it exists already (in this
/// process too) or this user may not open it, which both mean "taken".
pub fn create_event(name: &str) -> std::io::Result<Option<OwnedHandle>> {
    match create_event_raw(name) {
        // A handle to an event that existed: dropped, which closes it.
        Ok((_, true)) => Ok(None),
        Ok((h, false)) => Ok(Some(h)),
        Err(e) if e.raw_os_error() == Some(ERROR_ACCESS_DENIED) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Whether the named event `name` exists (this user may not open it counts): looked at by opening it and closing it
/// at once, so that a look never keeps an event alive past its holder by more than that moment.
pub fn event_exists(name: &str) -> std::io::Result<bool> {
    let name = wide(name);
    // SAFETY: `name` is NUL-terminated; the handle returned is owned and closed below.
    let handle = unsafe { OpenEventW(SYNCHRONIZE, 0, name.as_ptr()) };
    if !handle.is_null() {
        // SAFETY: a handle OpenEventW has just returned.
        unsafe { CloseHandle(handle) };
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        Some(ERROR_ACCESS_DENIED) => Ok(true),
        Some(ERROR_FILE_NOT_FOUND) => Ok(false),
        _ => Err(e),
    }
}

/// Locks one byte at `offset` of `file`, exclusively, without waiting: `Ok(false)` when another handle holds it (in
/// this process or another). The lock is the handle's, and goes with it.
pub fn try_lock_byte(file: &File, offset: u64) -> std::io::Result<bool> {
    let mut o = OVERLAPPED {
        internal: 0,
        internal_high: 0,
        offset: offset as u32,
        offset_high: (offset >> 32) as u32,
        event: std::ptr::null_mut(),
    };
    let flags = LOCKFILE_EXCLUSIVE_LOCK | LOCKFILE_FAIL_IMMEDIATELY;
    // SAFETY: `file` is an open, synchronous handle and `o` lives until the call returns.
    if unsafe { LockFileEx(file.as_raw_handle(), flags, 0, 1, 0, &mut o) } != 0 {
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() == Some(ERROR_LOCK_VIOLATION) {
        return Ok(false);
    }
    Err(e)
}

/// What a file is, by the handle: volume serial number and 128-bit file id, unique on the machine while it exists.
pub type FileId = (u64, u128);

/// The identity of the open file or directory `file`.
pub fn file_id(file: &File) -> std::io::Result<FileId> {
    let mut info = FILE_ID_INFO::default();
    // SAFETY: `info` is a FILE_ID_INFO of the size given.
    let ok = unsafe {
        GetFileInformationByHandleEx(
            file.as_raw_handle(),
            FILE_ID_INFO_CLASS,
            (&mut info as *mut FILE_ID_INFO).cast(),
            std::mem::size_of::<FILE_ID_INFO>() as u32,
        )
    };
    if ok == 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((info.volume_serial_number, u128::from_le_bytes(info.file_id)))
}

/// Whether the open file `file` is still in a directory: not deleted, nor waiting to be once its handles close.
pub fn is_linked(file: &File) -> std::io::Result<bool> {
    let mut info = FILE_STANDARD_INFO::default();
    // SAFETY: `info` is a FILE_STANDARD_INFO of the size given.
    let ok = unsafe {
        GetFileInformationByHandleEx(
            file.as_raw_handle(),
            FILE_STANDARD_INFO_CLASS,
            (&mut info as *mut FILE_STANDARD_INFO).cast(),
            std::mem::size_of::<FILE_STANDARD_INFO>() as u32,
        )
    };
    if ok == 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(info.number_of_links > 0 && info.delete_pending == 0)
}

/// Opens `path` as it is, never through a link (a symbolic link or junction is opened itself): read and write
/// (made when missing) or read only, shared with readers and writers but not with deletion, so that no process can
/// delete or rename the file (or, for a directory, the directory) while this handle is open.
pub fn open_held(path: &Path, write: bool) -> std::io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(write)
        .create(write)
        .share_mode(FILE_SHARE_READ | FILE_SHARE_WRITE)
        .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT | FILE_FLAG_BACKUP_SEMANTICS)
        .open(path)
}

/// Opens `path` to read it, never through a link, shared with everything (a reader stands in no one's way).
pub fn open_reader(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .read(true)
        .share_mode(FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE)
        .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT | FILE_FLAG_BACKUP_SEMANTICS)
        .open(path)
}

/// The identity of what `path` names, a link itself rather than its target: opened for its attributes only.
pub fn id_at(path: &Path) -> std::io::Result<FileId> {
    let file = OpenOptions::new()
        .access_mode(FILE_READ_ATTRIBUTES)
        .share_mode(FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE)
        .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT | FILE_FLAG_BACKUP_SEMANTICS)
        .open(path)?;
    file_id(&file)
}

/// The ProgramData folder (`%ProgramData%`, usually `C:\ProgramData`), as the shell knows it rather than as the
/// environment says; where the shell cannot say, `ProgramData` on the system drive.
pub fn program_data() -> PathBuf {
    let mut out: *mut u16 = std::ptr::null_mut();
    // SAFETY: a known folder id, no flags or token, and an out-pointer the shell fills; it is freed below.
    let hr = unsafe { SHGetKnownFolderPath(&FOLDERID_PROGRAM_DATA, 0, std::ptr::null_mut(), &mut out) };
    let mut found = None;
    if hr == 0 && !out.is_null() {
        // SAFETY: on success `out` is a NUL-terminated string.
        let len = (0..).take_while(|&i| unsafe { *out.add(i) } != 0).count();
        // SAFETY: `len` units before the NUL, read before the string is freed.
        found = Some(PathBuf::from(OsString::from_wide(unsafe { std::slice::from_raw_parts(out, len) })));
    }
    // SAFETY: CoTaskMemFree takes what the shell allocated, or NULL.
    unsafe { CoTaskMemFree(out.cast()) };
    found.unwrap_or_else(system_drive_program_data)
}

fn system_drive_program_data() -> PathBuf {
    let mut buf = [0u16; 260];
    // SAFETY: `buf` holds the number of units given.
    let n = unsafe { GetSystemWindowsDirectoryW(buf.as_mut_ptr(), buf.len() as u32) } as usize;
    let windows = PathBuf::from(OsString::from_wide(buf.get(..n).unwrap_or_default()));
    let mut dir = windows.components().next().map(|c| c.as_os_str().to_os_string()).unwrap_or_default();
    dir.push("\\ProgramData");
    PathBuf::from(dir)
}

/// Memory the system allocated with `LocalAlloc`, freed when dropped.
struct Local(*mut c_void);

impl Drop for Local {
    fn drop(&mut self) {
        // SAFETY: memory a call allocated for this process to free with LocalFree, or NULL.
        unsafe { LocalFree(self.0) };
    }
}

/// Who owns an open file or directory.
pub struct Owner {
    /// Whether it is this process's user, the machine (SYSTEM) or its administrators: the counterparts of Unix's
    /// own user and root.
    pub trusted: bool,
    /// The owner's SID, as text (`S-1-5-21-…`).
    pub sid: String,
}

/// The owner of `file` (opened with read access, which includes `READ_CONTROL`).
pub fn owner(file: &File) -> std::io::Result<Owner> {
    let mut owner: *mut c_void = std::ptr::null_mut();
    let mut descriptor: *mut c_void = std::ptr::null_mut();
    // SAFETY: an open handle, and out-pointers for the owner and the descriptor (freed below); the others are NULL.
    let rc = unsafe {
        GetSecurityInfo(
            file.as_raw_handle(),
            SE_FILE_OBJECT,
            OWNER_SECURITY_INFORMATION,
            &mut owner,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            &mut descriptor,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::from_raw_os_error(rc as i32));
    }
    // The owner points into the descriptor: both go when it is freed, after their last use below.
    let _descriptor = Local(descriptor);
    if owner.is_null() {
        return Err(std::io::Error::other("the directory's security descriptor names no owner"));
    }
    // SAFETY: `owner` is a valid SID for as long as the descriptor lives.
    let machine = MACHINE_SIDS.iter().any(|&kind| unsafe { IsWellKnownSid(owner, kind) } != 0);
    let trusted = machine || is_this_user(owner)?;
    Ok(Owner { trusted, sid: sid_text(owner) })
}

/// Whether `sid` is this process's user.
fn is_this_user(sid: *mut c_void) -> std::io::Result<bool> {
    let mut token: HANDLE = std::ptr::null_mut();
    // SAFETY: the pseudo handle of this process, and an out-pointer for the token, owned below.
    if unsafe { OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &mut token) } == 0 {
        return Err(std::io::Error::last_os_error());
    }
    let token = owned(token)?;
    // TOKEN_USER: a SID_AND_ATTRIBUTES whose first field points to the user's SID, then the SID itself.
    let mut buf = [0u64; 128];
    let mut len = 0u32;
    // SAFETY: `buf` is as long as the size given, and aligned for the pointer it starts with.
    let ok = unsafe {
        GetTokenInformation(
            token.as_raw_handle(),
            TOKEN_USER_CLASS,
            buf.as_mut_ptr().cast(),
            std::mem::size_of_val(&buf) as u32,
            &mut len,
        )
    };
    if ok == 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: on success `buf` starts with the pointer to the user's SID, which lies within `buf`.
    let user = unsafe { buf.as_ptr().cast::<*mut c_void>().read() };
    // SAFETY: two valid SIDs.
    Ok(unsafe { EqualSid(sid, user) } != 0)
}

/// `sid` as text, or "an unknown SID".
fn sid_text(sid: *mut c_void) -> String {
    let mut text: *mut u16 = std::ptr::null_mut();
    // SAFETY: a valid SID, and an out-pointer for the text, freed below.
    if unsafe { ConvertSidToStringSidW(sid, &mut text) } == 0 || text.is_null() {
        return "an unknown SID".to_string();
    }
    let _text = Local(text.cast());
    // SAFETY: on success `text` is a NUL-terminated string, read before it is freed.
    let len = (0..).take_while(|&i| unsafe { *text.add(i) } != 0).count();
    // SAFETY: `len` units before the NUL.
    String::from_utf16_lossy(unsafe { std::slice::from_raw_parts(text, len) })
}

/// For the tests: makes Everyone (S-1-1-0) the owner of the directory at `path`, as another user's would be. Windows
/// lets a process give away what it owns only with the restore privilege; where it may not, the error says so.
#[cfg(test)]
pub fn give_to_everyone(path: &Path) -> std::io::Result<()> {
    #[link(name = "advapi32")]
    extern "system" {
        fn SetSecurityInfo(
            handle: HANDLE,
            object_type: i32,
            info: u32,
            owner: *mut c_void,
            group: *mut c_void,
            dacl: *mut c_void,
            sacl: *mut c_void,
        ) -> u32;
        fn CreateWellKnownSid(kind: i32, domain: *mut c_void, sid: *mut c_void, size: *mut u32) -> BOOL;
    }
    const READ_CONTROL: u32 = 0x0002_0000;
    const WRITE_OWNER: u32 = 0x0008_0000;
    const WIN_WORLD_SID: i32 = 1;
    let dir = OpenOptions::new()
        .access_mode(READ_CONTROL | WRITE_OWNER)
        .share_mode(FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE)
        .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT | FILE_FLAG_BACKUP_SEMANTICS)
        .open(path)?;
    let mut sid = [0u64; 9];
    let mut size = std::mem::size_of_val(&sid) as u32;
    // SAFETY: `sid` holds `size` bytes.
    if unsafe { CreateWellKnownSid(WIN_WORLD_SID, std::ptr::null_mut(), sid.as_mut_ptr().cast(), &mut size) } == 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: an open handle with WRITE_OWNER, and a valid SID; nothing else is set.
    let rc = unsafe {
        SetSecurityInfo(
            dir.as_raw_handle(),
            SE_FILE_OBJECT,
            OWNER_SECURITY_INFORMATION,
            sid.as_mut_ptr().cast(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    };
    if rc != 0 {
        return Err(std::io::Error::from_raw_os_error(rc as i32));
    }
    Ok(())
}
