using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;

namespace Hyder.Hosting.Windows;

/// <summary>
/// The service control functions of advapi32, imported with <c>LibraryImport</c> (source-generated,
/// no runtime marshalling): Microsoft.Extensions.Hosting.WindowsServices and
/// System.ServiceProcess.ServiceController are not served here.
/// </summary>
internal static unsafe partial class Advapi32
{
    private const string Library = "advapi32.dll";

    /// <summary><c>SERVICE_WIN32_OWN_PROCESS</c>: one service in its own process.</summary>
    public const uint ServiceWin32OwnProcess = 0x10;

    [LibraryImport(Library, SetLastError = true)]
    [UnmanagedCallConv(CallConvs = [typeof(CallConvStdcall)])]
    [return: MarshalAs(UnmanagedType.Bool)]
    public static partial bool StartServiceCtrlDispatcherW(ServiceTableEntry* serviceStartTable);

    [LibraryImport(Library, SetLastError = true, StringMarshalling = StringMarshalling.Utf16)]
    [UnmanagedCallConv(CallConvs = [typeof(CallConvStdcall)])]
    public static partial nint RegisterServiceCtrlHandlerExW(
        string serviceName,
        delegate* unmanaged[Stdcall]<uint, uint, nint, nint, uint> handler,
        nint context);

    [LibraryImport(Library, SetLastError = true)]
    [UnmanagedCallConv(CallConvs = [typeof(CallConvStdcall)])]
    [return: MarshalAs(UnmanagedType.Bool)]
    public static partial bool SetServiceStatus(nint serviceStatus, NativeServiceStatus* status);

    /// <summary><c>SERVICE_TABLE_ENTRYW</c>; the table ends with an entry of nulls.</summary>
    [StructLayout(LayoutKind.Sequential)]
    public struct ServiceTableEntry
    {
        public char* ServiceName;
        public delegate* unmanaged[Stdcall]<uint, char**, void> ServiceProc;
    }
}

/// <summary><c>SERVICE_STATUS</c>: seven DWORDs.</summary>
[StructLayout(LayoutKind.Sequential)]
internal struct NativeServiceStatus
{
    public uint ServiceType;
    public uint CurrentState;
    public uint ControlsAccepted;
    public uint Win32ExitCode;
    public uint ServiceSpecificExitCode;
    public uint CheckPoint;
    public uint WaitHint;

    /// <summary>The native form of a report: an own-process service, the wait hint in milliseconds.</summary>
    public static NativeServiceStatus From(ServiceStatusReport report) => new()
    {
        ServiceType = Advapi32.ServiceWin32OwnProcess,
        CurrentState = (uint)report.State,
        ControlsAccepted = (uint)report.ControlsAccepted,
        Win32ExitCode = report.Win32ExitCode,
        ServiceSpecificExitCode = report.ServiceSpecificExitCode,
        CheckPoint = report.CheckPoint,
        WaitHint = (uint)Math.Clamp(report.WaitHint.TotalMilliseconds, 0, uint.MaxValue),
    };
}
