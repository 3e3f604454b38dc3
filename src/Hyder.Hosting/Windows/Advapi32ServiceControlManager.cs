using System.ComponentModel;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Runtime.Versioning;

namespace Hyder.Hosting.Windows;

/// <summary>
/// The real SCM through advapi32. One service per process (<c>SERVICE_WIN32_OWN_PROCESS</c>): the
/// SCM's callbacks are static functions, so the service's main function is held in a static field.
/// The control handler and its context live until the process exits, as the SCM may call it until then.
/// </summary>
[SupportedOSPlatform("windows")]
public sealed unsafe class Advapi32ServiceControlManager : IServiceControlManager
{
    private static Action? s_serviceMain;
    private nint _statusHandle;

    /// <inheritdoc/>
    public void RunDispatcher(string serviceName, Action serviceMain)
    {
        ArgumentNullException.ThrowIfNull(serviceName);
        ArgumentNullException.ThrowIfNull(serviceMain);
        if (Interlocked.CompareExchange(ref s_serviceMain, serviceMain, null) is not null)
        {
            throw new InvalidOperationException("A process runs one service.");
        }

        // The SCM reads the table while the dispatcher runs, so it lives on this thread's stack
        // and the name in native memory until the call returns.
        var name = (char*)Marshal.StringToHGlobalUni(serviceName);
        try
        {
            var table = stackalloc Advapi32.ServiceTableEntry[2];
            table[0] = new Advapi32.ServiceTableEntry { ServiceName = name, ServiceProc = &ServiceMain };
            table[1] = default;
            if (!Advapi32.StartServiceCtrlDispatcherW(table))
            {
                throw new Win32Exception(Marshal.GetLastPInvokeError());
            }
        }
        finally
        {
            Marshal.FreeHGlobal((nint)name);
        }
    }

    /// <inheritdoc/>
    public void RegisterControlHandler(string serviceName, Func<uint, uint> handler)
    {
        ArgumentNullException.ThrowIfNull(handler);
        // Never freed: the SCM may call the handler until the process exits.
        var context = GCHandle.ToIntPtr(GCHandle.Alloc(handler));
        var handle = Advapi32.RegisterServiceCtrlHandlerExW(serviceName, &HandlerEx, context);
        if (handle == 0)
        {
            throw new Win32Exception(Marshal.GetLastPInvokeError());
        }

        Volatile.Write(ref _statusHandle, handle);
    }

    /// <inheritdoc/>
    public bool SetStatus(ServiceStatusReport status)
    {
        var handle = Volatile.Read(ref _statusHandle);
        if (handle == 0)
        {
            return false;
        }

        var native = NativeServiceStatus.From(status);
        return Advapi32.SetServiceStatus(handle, &native);
    }

    [UnmanagedCallersOnly(CallConvs = [typeof(CallConvStdcall)])]
    private static void ServiceMain(uint argumentCount, char** arguments)
    {
        // An exception must not cross into the SCM's thread: it would end the process silently.
        try
        {
            s_serviceMain?.Invoke();
        }
        catch (Exception e)
        {
            Environment.FailFast("Hyder service main failed", e);
        }
    }

    [UnmanagedCallersOnly(CallConvs = [typeof(CallConvStdcall)])]
    private static uint HandlerEx(uint control, uint eventType, nint eventData, nint context)
    {
        try
        {
            return GCHandle.FromIntPtr(context).Target is Func<uint, uint> handler ? handler(control) : Win32Codes.CallNotImplemented;
        }
        catch (Exception e)
        {
            Environment.FailFast("Hyder service control handler failed", e);
            return Win32Codes.CallNotImplemented;
        }
    }
}
