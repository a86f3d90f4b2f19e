import { render } from "preact";
import { useEffect } from "preact/hooks";
import { Layout } from "./components/Layout";
import { Loading, Page } from "./components/ui";
import { t, useLang } from "./i18n";
import { Auth } from "./pages/Auth";
import { Credits } from "./pages/Credits";
import { Dashboard } from "./pages/Dashboard";
import { Developers } from "./pages/Developers";
import { Integrations } from "./pages/Integrations";
import { NewProject } from "./pages/NewProject";
import { Notifications } from "./pages/Notifications";
import { Profile } from "./pages/Profile";
import { ClipEditor } from "./pages/ClipEditor";
import { ProjectPage } from "./pages/Project";
import { Schedule } from "./pages/Schedule";
import { Templates } from "./pages/Templates";
import { match, navigate, onLinkClick, useLocation } from "./router";
import { loadSession, useUser } from "./session";
import "./styles.css";

function Routes({ path }: { path: string }) {
  let m;
  if (path === "/") return <Dashboard />;
  if (path === "/projects/new") return <NewProject />;
  if ((m = match("/projects/:id", path))) return <ProjectPage id={m.id} />;
  if ((m = match("/projects/:id/clips/:clipId/edit", path))) return <ClipEditor projectId={m.id} clipId={m.clipId} />;
  if (path === "/templates") return <Templates />;
  if (path === "/schedule") return <Schedule />;
  if (path === "/integrations") return <Integrations />;
  if (path === "/credits") return <Credits />;
  if (path === "/developers") return <Developers />;
  if (path === "/notifications") return <Notifications />;
  if (path === "/profile") return <Profile />;
  return (
    <Page title={t("notFound")}>
      <a href="/">{t("back")}</a>
    </Page>
  );
}

function App() {
  useLang();
  const user = useUser();
  const { path } = useLocation();
  const authPage = path === "/sign-in" || path === "/sign-up";
  useEffect(() => {
    if (user === null && !authPage) navigate("/sign-in?next=" + encodeURIComponent(location.pathname + location.search), true);
    if (user && authPage) navigate(new URLSearchParams(location.search).get("next") || "/", true);
  }, [user, authPage]);
  if (user === undefined) return <Loading />;
  if (authPage || user === null) return <Auth mode={path === "/sign-up" ? "up" : "in"} />;
  return (
    <Layout>
      <Routes path={path} />
    </Layout>
  );
}

document.addEventListener("click", onLinkClick);
const root = document.getElementById("app")!;
loadSession().finally(() => render(<App />, root));
